-- token_bucket.lua (code 1): Guava's SmoothBursty, starting full as flow's
-- local token_bucket does.
--
-- Guava keeps storedPermits and nextFree; a request is granted iff
-- nextFree - maxWait <= now (tryAcquire) and waits max(nextFree - now, 0):
-- it pays only earlier debt, its own cost pushes nextFree for the next one.
-- For SmoothBursty (stored permits cost nothing, one is earned per stable
-- interval) the two never carry information at once: stored > 0 only right
-- after a resync, when nextFree = then. So the state is one number,
--   e = nextFree - storedPermits * stable   (microseconds),
-- the moment the bucket was last empty with no debt. At now: e > now means
-- stored 0 and nextFree = e; otherwise stored = min(max, (now - e)/stable)
-- and nextFree = now (Guava's resync). One GET and one SET ... PX, as GCRA.
--
-- Parameters: p1 stable interval (us per permit), p2 maxPermits,
-- p3 maxWait (us), p4 most: the largest request (the larger of limit and
-- burst, whole permits). Guava would grant any request that finds no debt
-- and push every later one back by its cost: a larger one is NEVER.

local function bursty_check(i, key, n)
  if n > param(i, 4) then return NEVER end
  local stable, maxp, maxwait = param(i, 1), param(i, 2), param(i, 3)
  local full = now - maxp * stable -- e of a full bucket
  -- Absent (never used, or expired once full) reads as full.
  local e = math.max(tonumber(redis.call('GET', key)) or full, full)
  local stored, nextf = 0, e
  if e <= now then stored, nextf = (now - e) / stable, now end
  local ok, retry, wait = 1, 0, math.max(0, nextf - now)
  if nextf - maxwait > now then ok, retry, wait = 0, nextf - maxwait - now, 0 end
  -- One constructor: a table grown field by field rehashes several times.
  return {ok = ok, wait = wait, retry = retry, left = stored, rem = stored - math.min(n, stored),
    avail = ok * math.max(1, math.floor(stored)), reset = e - full,
    e = e, stable = stable, full = full, stored = stored, nextf = nextf}
end

-- bursty_commit spends n: stored permits first (free), then fresh ones at
-- the stable interval, truncated to whole microseconds as Guava's (long)
-- cast does.
local function bursty_commit(i, key, n, st)
  local e
  if n <= st.stored then
    e = st.e + n * st.stable
  else
    e = st.nextf + math.floor((n - st.stored) * st.stable)
  end
  -- The key may go once the bucket is full again (absent reads as full),
  -- so its expiry never changes a decision.
  redis.call('SET', key, e, 'PX', pxms(e - st.full))
end

-- bursty_refund gives n permits back: debt first, then storage, never
-- above a full bucket.
local function bursty_refund(i, key, n)
  local e = tonumber(redis.call('GET', key))
  if e == nil then return end
  local stable, maxp = param(i, 1), param(i, 2)
  local full = now - maxp * stable
  e = math.max(full, e - n * stable)
  redis.call('SET', key, e, 'PX', pxms(e - full))
end

-- bursty_settle settles a call at its actual cost, d permits more (d > 0)
-- or fewer than it reserved (see settle.lua). A charge spends stored
-- permits, then owes: e moves past now, but never further than md
-- (maxDebt) permits' worth, so at most md is owed. A refund is
-- bursty_refund. Returns the permits moved.
local function bursty_settle(i, key, d, at, md)
  local stable, maxp = param(i, 1), param(i, 2)
  local full = now - maxp * stable
  local e = math.max(tonumber(redis.call('GET', key)) or full, full)
  if d < 0 then
    local back = math.min(-d, (e - full) / stable)
    if back <= 0 then return 0 end
    bursty_refund(i, key, -d)
    return math.floor(back)
  end
  local limit = now + math.floor(md * stable)
  if e >= limit then return 0 end -- already owes the most it may
  local nexte, done = e + math.floor(d * stable), d
  if nexte > limit then nexte, done = limit, math.floor((limit - e) / stable) end
  redis.call('SET', key, nexte, 'PX', pxms(nexte - full))
  return done
end

ALGO[1] = {check = bursty_check, commit = bursty_commit, refund = bursty_refund, settle = bursty_settle}
