-- leaky_bucket.lua (code 3): evenly spaced calls, as flow's local
-- leaky_bucket and Sentinel's throttling. A call of n permits goes ahead
-- n*spacing after the slot of the previous admitted call, or now if that
-- is past; idle time is not saved up. With maxWait > 0 a call whose slot is
-- within maxWait is admitted and told to wait (the engine waits, not Redis).
--
-- State (string): the slot of the latest admitted call (integer us).
-- Parameters: p1 spacing (us per permit), p2 maxWait (us), p3 window (us),
-- p4 most: the limit per window in whole permits. A larger call is NEVER,
-- queued or not: an idle bucket would let it go at once, free.

local function leaky_check(i, key, n)
  if n > param(i, 4) then return NEVER end
  local spacing, maxwait = param(i, 1), param(i, 2)
  local last = tonumber(redis.call('GET', key))
  local slot = now
  if last ~= nil then slot = math.max(now, last + math.floor(n * spacing)) end
  local wait = slot - now
  local st = {slot = slot, left = 0, avail = 0, reset = wait}
  if last == nil or last + math.floor(spacing) <= now then st.left = 1 end
  if wait > maxwait then
    st.ok, st.retry, st.wait = 0, wait - maxwait, 0
    return st
  end
  st.ok, st.retry, st.wait, st.rem = 1, 0, wait, 0
  return st
end

local function leaky_commit(i, key, n, st)
  -- The slot matters until a call of up to a window's worth of permits
  -- could no longer be pushed back by it.
  redis.call('SET', key, st.slot, 'PX', pxms(st.slot - now + param(i, 3)))
end

local function leaky_refund(i, key, n)
  local last = tonumber(redis.call('GET', key))
  if last == nil then return end
  -- Give the slot back; earlier than now it simply means idle.
  redis.call('SET', key, last - math.floor(n * param(i, 1)), 'KEEPTTL')
end

ALGO[3] = {check = leaky_check, commit = leaky_commit, refund = leaky_refund}
