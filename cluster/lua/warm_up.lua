-- warm_up.lua: Guava's SmoothWarmingUp (code 2) on the Guava core of
-- token_bucket.lua. It starts cold (maxPermits stored), and stored permits
-- above the threshold cost more, up to coldFactor x the stable interval.
--
-- Parameters (computed in Go as Guava does): p1 stable (us), p2 maxPermits,
-- p3 maxWait (us), p4 threshold permits, p5 slope (us per permit, per
-- permit), p6 coolDown interval = warmupPeriod / maxPermits (us).

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

ALGO[2] = {
  check = function(i, key, n) return guava_check(i, key, n, param(i, 6), warm_cost) end,
  commit = guava_commit,
  refund = function(i, key, n) guava_refund(i, key, n, param(i, 6)) end,
}
