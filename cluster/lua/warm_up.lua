-- warm_up.lua: Guava's SmoothWarmingUp (code 2). It starts cold
-- (maxPermits stored), and stored permits above the threshold cost more, up
-- to coldFactor x the stable interval.
--
-- Guava keeps storedPermits and nextFree; a request is granted iff
-- nextFree - maxWait <= now (tryAcquire) and waits max(nextFree - now, 0):
-- it pays only earlier debt, its own cost pushes nextFree for the next one.
-- Unlike SmoothBursty, spending stored permits costs time, so both values
-- matter at once. State (string): "<stored permits> <nextFree us>", read
-- with one GET and written with its expiry in one SET ... PX.
--
-- Parameters (computed in Go as Guava does): p1 stable (us), p2 maxPermits,
-- p3 maxWait (us), p4 threshold permits, p5 slope (us per permit, per
-- permit), p6 coolDown interval = warmupPeriod / maxPermits (us), p7 most:
-- the largest request (the limit per window, whole permits); a larger one
-- is NEVER (see token_bucket.lua).

-- guava_read returns stored permits and nextFree, or nil when absent.
local function guava_read(key)
  local v = redis.call('GET', key)
  if not v then return nil, nil end
  local s, n = string.match(v, '^(%S+) (%S+)$')
  return tonumber(s), tonumber(n)
end

-- guava_write stores the state with its expiry: the key may go once the
-- bucket is full again with no debt, as absent then reads as full, so
-- expiry never changes a decision.
local function guava_write(key, stored, nextf, maxp, cool)
  local full = math.max(0, nextf - now) + (maxp - stored) * cool
  redis.call('SET', key, string.format('%.17g', stored) .. ' ' .. string.format('%d', nextf), 'PX', pxms(full))
end

-- guava_check reads and resyncs the state. cost(stored, k) is the time the
-- k stored permits cost (0 for bursty, the trapezoid for warm-up); cool is
-- the interval that earns one stored permit while idle.
local function guava_check(i, key, n, cool, cost)
  local stable, maxp, maxwait = param(i, 1), param(i, 2), param(i, 3)
  local stored, nextf = guava_read(key)
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
  guava_write(key, st.stored - spend, nextf, st.maxp, st.cool)
end

-- guava_refund gives n permits back: nextFree moves back by their fresh
-- cost, never before now; what is left returns to storage, never above max.
local function guava_refund(i, key, n, cool)
  local stable, maxp = param(i, 1), param(i, 2)
  local stored, nextf = guava_read(key)
  if stored == nil or nextf == nil then return end
  if now > nextf then
    stored = math.min(maxp, stored + (now - nextf) / cool)
    nextf = now
  end
  local back = math.min(nextf - now, math.floor(n * stable))
  nextf = nextf - back
  guava_write(key, math.min(maxp, stored + (n - back / stable)), nextf, maxp, cool)
end

-- warm_cost is the area under interval(p) = stable + (p - threshold)*slope
-- for the k permits taken off the top of stored: a trapezoid for the part
-- above the threshold plus stable per permit below it.
local function warm_cost(i, stored, k)
  local stable, threshold, slope = param(i, 1), param(i, 4), param(i, 5)
  local above = stored - threshold
  local us = 0
  if above > 0 then
    local take = math.min(above, k)
    local hi = stable + above * slope
    local lo = stable + (above - take) * slope
    us = take * (hi + lo) / 2
    k = k - take
  end
  return us + stable * k
end

-- warm_settle settles a call at its actual cost (see settle.lua). A
-- charge reserves the most whole permits, up to d, whose cost (stored ones
-- at their warm-up cost, then fresh ones) keeps nextFree within md
-- (maxDebt) stable intervals of now; a refund is guava_refund. Returns the
-- permits moved.
local function warm_settle(i, key, d, at, md)
  local cool = param(i, 6)
  if d < 0 then
    local stored, nextf = guava_read(key)
    if stored == nil or nextf == nil then return 0 end -- absent: full, nothing to give back
    guava_refund(i, key, -d, cool)
    return -d
  end
  local st = guava_check(i, key, 0, cool, warm_cost)
  local limit = now + math.floor(md * st.stable)
  local function cost(k)
    local spend = math.min(k, st.stored)
    return warm_cost(i, st.stored, spend) + (k - spend) * st.stable
  end
  local k = d
  if st.nextf + math.floor(cost(k)) > limit then
    -- The most whole permits that fit: cost grows with k.
    local lo, hi = 0, d
    while lo < hi do
      local mid = math.floor((lo + hi + 1) / 2)
      if st.nextf + math.floor(cost(mid)) <= limit then lo = mid else hi = mid - 1 end
    end
    k = lo
  end
  if k > 0 then guava_commit(i, key, k, st) end
  return k
end

ALGO[2] = {
  check = function(i, key, n)
    if n > param(i, 7) then return NEVER end
    return guava_check(i, key, n, param(i, 6), warm_cost)
  end,
  commit = guava_commit,
  refund = function(i, key, n) guava_refund(i, key, n, param(i, 6)) end,
  settle = warm_settle,
}
