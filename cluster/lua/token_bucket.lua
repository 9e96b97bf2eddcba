-- token_bucket.lua: Guava's SmoothBursty (code 1), starting full as flow's
-- local token_bucket does. The Guava core here is shared with warm_up.lua.
--
-- State (hash): s = stored permits (fractional), n = nextFree (integer us).
-- Parameters: p1 stable interval (us per permit), p2 maxPermits,
-- p3 maxWait (us), then for warm_up p4 threshold, p5 slope, p6 coolDown.
--
-- Guava: resync(now) stores the permits earned since nextFree; a request
-- is granted iff nextFree - maxWait <= now (tryAcquire) and waits
-- max(nextFree - now, 0): it pays only earlier debt, its own cost pushes
-- nextFree for the next caller.

-- guava_check reads and resyncs the state. cost(stored, k) is the time the
-- k stored permits cost (0 for bursty, the trapezoid for warm-up); cool is
-- the interval that earns one stored permit while idle.
local function guava_check(i, key, n, cool, cost)
  local stable, maxp, maxwait = param(i, 1), param(i, 2), param(i, 3)
  local v = redis.call('HMGET', key, 's', 'n')
  local stored, nextf = tonumber(v[1]), tonumber(v[2])
  if stored == nil or nextf == nil then
    -- Absent (never used, or expired once full): a full bucket. For warm-up
    -- "full" is cold, exactly Guava's starting state.
    stored, nextf = maxp, now
  end
  if now > nextf then
    stored = math.min(maxp, stored + (now - nextf) / cool)
    nextf = now
  end
  local st = {stored = stored, nextf = nextf, stable = stable, maxp = maxp, cool = cool, cost = cost}
  st.left = stored
  st.reset = math.max(0, nextf - now) + (maxp - stored) * cool
  if nextf - maxwait > now then
    st.ok, st.retry, st.wait, st.avail = 0, nextf - maxwait - now, 0, 0
    return st
  end
  st.ok, st.retry, st.wait = 1, 0, math.max(0, nextf - now)
  st.avail = math.max(1, math.floor(stored))
  st.rem = stored - math.min(n, stored)
  return st
end

-- guava_commit reserves n permits: stored ones first (at cost), then fresh
-- ones at the stable interval; nextFree moves by the whole cost, truncated
-- to whole microseconds as Guava's (long) cast does.
local function guava_commit(i, key, n, st)
  local spend = math.min(n, st.stored)
  local fresh = n - spend
  local wait = st.cost(i, st.stored, spend) + fresh * st.stable
  local nextf = st.nextf + math.floor(wait)
  local stored = st.stored - spend
  redis.call('HSET', key, 's', fstr(stored), 'n', istr(nextf))
  -- The key may go once the bucket is full again with no debt: absent then
  -- reads as full, so expiry never changes a decision.
  local full = math.max(0, nextf - now) + (st.maxp - stored) * st.cool
  redis.call('PEXPIRE', key, istr(ceil_ms(full)))
end

-- guava_refund gives n permits back: nextFree moves back by their fresh
-- cost, never before now; what is left returns to storage, never above max.
local function guava_refund(i, key, n, cool)
  local stable, maxp = param(i, 1), param(i, 2)
  local v = redis.call('HMGET', key, 's', 'n')
  local stored, nextf = tonumber(v[1]), tonumber(v[2])
  if stored == nil or nextf == nil then return end
  if now > nextf then
    stored = math.min(maxp, stored + (now - nextf) / cool)
    nextf = now
  end
  local back = math.min(nextf - now, math.floor(n * stable))
  nextf = nextf - back
  stored = math.min(maxp, stored + (n - back / stable))
  redis.call('HSET', key, 's', fstr(stored), 'n', istr(nextf))
  local full = math.max(0, nextf - now) + (maxp - stored) * cool
  redis.call('PEXPIRE', key, istr(ceil_ms(full)))
end

local function bursty_cost(i, stored, k) return 0 end

ALGO[1] = {
  check = function(i, key, n) return guava_check(i, key, n, param(i, 1), bursty_cost) end,
  commit = guava_commit,
  refund = function(i, key, n) guava_refund(i, key, n, param(i, 1)) end,
}
