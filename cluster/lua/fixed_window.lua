-- fixed_window.lua (code 4): a counter per window, windows aligned to
-- multiples of the window length on Redis's clock, so every instance agrees
-- where a window starts.
--
-- State (hash): w = start of the counted window (us), c = permits taken.
-- Parameters: p1 window (us), p2 limit (whole permits).

local function fixed_check(i, key, n)
  local win, limit = param(i, 1), param(i, 2)
  if n > limit then return NEVER end -- no window holds n
  local ws = now - now % win
  local v = redis.call('HMGET', key, 'w', 'c')
  local c = 0
  if tonumber(v[1]) == ws then c = tonumber(v[2]) or 0 end
  local st = {ws = ws, c = c, left = math.max(0, limit - c), reset = ws + win - now}
  st.avail = st.left
  st.bound = ws + win - now -- a lease of this window's permits ends with it
  if c + n > limit then
    st.ok, st.wait, st.retry = 0, 0, ws + win - now
    return st
  end
  st.ok, st.wait, st.retry, st.rem = 1, 0, 0, limit - c - n
  return st
end

local function fixed_commit(i, key, n, st)
  if st.c == 0 then
    -- A new window: counter and expiry are set together, the expiry at the
    -- window's end (hits never push it back, so it is not an idle timeout).
    redis.call('HSET', key, 'w', st.ws, 'c', n)
    redis.call('PEXPIRE', key, pxms(st.ws + param(i, 1) - now))
    return
  end
  redis.call('HINCRBY', key, 'c', n)
end

-- at is when the permits were counted (a lease's batch; else now): a lease
-- expires at its window's end but often returns its rest later, in the next
-- window, whose counter must not get permits it never gave (over-admission).
local function fixed_refund(i, key, n, at)
  local win = param(i, 1)
  local ws = now - now % win
  if at - at % win ~= ws then return end -- counted in a window that is over
  local v = redis.call('HMGET', key, 'w', 'c')
  if tonumber(v[1]) ~= ws then return end -- that window is over
  redis.call('HSET', key, 'c', math.max(0, (tonumber(v[2]) or 0) - n))
end

-- fixed_settle adjusts the window the call was counted in (at), while it
-- is the current one (see settle.lua): a charge adds to its count up to
-- the limit (p2, most) plus md (maxDebt), a refund takes from it, never
-- below zero. A closed window (or a count Redis lost) settles nothing.
-- Returns the permits moved.
local function fixed_settle(i, key, d, at, md)
  local win = param(i, 1)
  local ws = now - now % win
  if at - at % win ~= ws then return 0 end
  local v = redis.call('HMGET', key, 'w', 'c')
  if tonumber(v[1]) ~= ws then return 0 end
  local c = tonumber(v[2]) or 0
  local k = math.max(d, -c)
  if d > 0 then k = math.min(d, math.max(param(i, 2) + math.floor(md) - c, 0)) end
  if k ~= 0 then redis.call('HSET', key, 'c', c + k) end
  return math.abs(k)
end

ALGO[4] = {check = fixed_check, commit = fixed_commit, refund = fixed_refund, settle = fixed_settle}
