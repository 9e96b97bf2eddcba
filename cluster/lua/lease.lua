-- lease.lua: takes a batch of up to ARGV[1] permits for a local lease, at
-- most a quarter of what every rule can give now (at least 1), in one
-- atomic step. Reply:
--   {granted 1/0, refusing rule or -1, permits left, 0, retry-after us,
--    permits taken, us until the lease must end (a fixed window's end; -1: none),
--    now in us (sent back with the return, see release.lua)}
-- The Go side spends the batch locally until it runs out or the lease
-- period (capped at that bound) ends, and gives back what it did not spend.

local want = tonumber(ARGV[1])
local nr = NRULES
local sts = {}
local avail, bound = math.huge, -1
for i = 1, nr do
  local st = ALGO[CODE[i]].check(i, KEYS[i], 1)
  if st.ok ~= 1 then
    return {0, i - 1, math.floor(math.max(0, st.left)), 0, math.floor(math.max(0, math.ceil(st.retry))), 0, 0, now}
  end
  sts[i] = st
  avail = math.min(avail, st.avail)
  if st.bound ~= nil and (bound < 0 or st.bound < bound) then bound = st.bound end
end
-- A batch takes at most a quarter of what the rules have left, so near the
-- limit batches shrink towards one permit: permits parked in other
-- instances' leases then stay few, which bounds both what leasing can add
-- to a window and what it can refuse while the cluster is under its limit.
-- A half was measured too, twice. Before sliding_window's retry fix
-- (issue 22): one instance at 1x made 117-119 round trips per 1 000
-- decisions instead of 652-733, but with 8-32 instances and a hot one at
-- 10x a sliding_window's windows spread to 95.7-105.4% of the limit.
-- After it (2026-11-25, two rounds of each, alternating; 8 and 32
-- instances, skewed and moving, 0.8x/1x/10x): a half cut the trips at 1x
-- skewed by a third (token_bucket 348-380 -> 197-257, sliding_window
-- 438-555 -> 277-404) and refused nothing under the limit, but one
-- sliding_window cell (32 instances, moving hot spot, 10x) admitted 97.7%
-- in one window, outside the 2% band, where the quarter's worst was 99.0%.
local k = math.max(1, math.floor(math.min(want, avail / 4)))
local rem = nil
for i = 1, nr do
  ALGO[CODE[i]].commit(i, KEYS[i], k, sts[i])
  local left = sts[i].left - k
  if rem == nil or left < rem then rem = left end
end
return {1, -1, math.floor(math.max(0, rem or 0)), 0, 0, k, math.floor(bound), now}
