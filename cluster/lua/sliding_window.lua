-- sliding_window.lua (code 5): the estimator of flow's local
-- sliding_window. Sub-windows of width w = window/B are aligned to multiples
-- of w on Redis's clock; k is the one now falls in and f how far into it
-- now is. The window covers sub-windows k-B+1..k whole and k-B for its last
-- (1-f) part:  estimate = sum(count[k-B+1..k]) + count[k-B]*(1-f).
--
-- State (hash): field = sub-window index, value = permits counted in it.
-- Parameters: p1 width w (us), p2 buckets B, p3 limit.

local function sliding_check(i, key, n)
  local w, b, limit = param(i, 1), param(i, 2), param(i, 3)
  -- Whole permits, at least 1, as flow's capacity counts them.
  if n > math.max(1, math.floor(limit + 1e-9)) then return NEVER end
  local k = math.floor(now / w)
  local f = (now - k * w) / w
  local raw = redis.call('HGETALL', key)
  local counts, stale = {}, {}
  for j = 1, #raw, 2 do
    local idx, c = tonumber(raw[j]), tonumber(raw[j + 1])
    if idx < k - b then stale[#stale + 1] = raw[j] else counts[idx] = c end
  end
  if #stale > 0 then redis.call('HDEL', key, unpack(stale)) end -- cleanup only
  local est = (counts[k - b] or 0) * (1 - f)
  for idx = k - b + 1, k do est = est + (counts[idx] or 0) end
  local st = {k = k, left = math.max(0, limit - est), reset = (k + b + 1) * w - now}
  st.avail = math.floor(st.left)
  if est + n <= limit then
    st.ok, st.wait, st.retry, st.rem = 1, 0, 0, limit - est - n
    return st
  end
  st.ok, st.wait, st.retry = 0, 0, 0
  -- Earliest moment the estimate, with nothing more admitted, lets n pass:
  -- in sub-window k+j the whole part is count[k+j-B+1..k], and the partial
  -- one count[k+j-B] shrinks linearly across it. The first sub-window
  -- where the whole part leaves room is the answer.
  for j = 0, b do
    local whole = 0
    for idx = k + j - b + 1, k do whole = whole + (counts[idx] or 0) end
    local part = counts[k + j - b] or 0
    if whole + n <= limit then
      local need = 0 -- fraction of sub-window k+j that must pass
      if part > 0 then need = math.max(0, 1 - (limit - whole - n) / part) end
      -- (k+j)*w is exact; only the fraction is rounded. Rounding
      -- (k+j+need)*w whole (about 2^34 * 2^17) lost ~0.4 us, and when the
      -- estimate crossed within that of now the answer became a sub-window
      -- later: a leasing instance, which repeats a refusal until its
      -- retry, then sat out the sub-window's release (issue 22). A
      -- crossing at or before now (j = 0, rounding of est) is 1 us away.
      st.retry = math.max(1, (k + j) * w + math.ceil(need * w) - now)
      return st
    end
  end
  return st
end

local function sliding_commit(i, key, n, st)
  local w, b = param(i, 1), param(i, 2)
  redis.call('HINCRBY', key, st.k, n)
  -- Sub-window k weighs nothing from (k+B+1)*w on: the newest count decides
  -- when the whole key is void.
  redis.call('PEXPIRE', key, pxms((st.k + b + 1) * w - now))
end

-- at is when the permits were counted (a lease's batch; else now): they
-- leave that sub-window, and nothing happens once it no longer counts.
local function sliding_refund(i, key, n, at)
  local k = math.floor(at / param(i, 1))
  if k < math.floor(now / param(i, 1)) - param(i, 2) then return end
  local c = tonumber(redis.call('HGET', key, k))
  if c == nil then return end
  redis.call('HSET', key, k, math.max(0, c - n))
end

-- sliding_settle adjusts the sub-window the call was counted in (at),
-- while it still counts (see settle.lua): a charge adds to it so long as
-- the window's sub-windows, the oldest in full, hold at most the capacity
-- (whole permits, as sliding_check's most) plus md (maxDebt); a refund
-- takes from it, never below zero. Returns the permits moved.
local function sliding_settle(i, key, d, at, md)
  local w, b, limit = param(i, 1), param(i, 2), param(i, 3)
  local k, ka = math.floor(now / w), math.floor(at / w)
  if ka < k - b or ka > k then return 0 end -- left the window (or unknown)
  local c = tonumber(redis.call('HGET', key, ka)) or 0
  if d < 0 then
    local take = math.min(-d, c)
    if take > 0 then redis.call('HSET', key, ka, c - take) end
    return take
  end
  local raw, total = redis.call('HGETALL', key), 0
  for j = 1, #raw, 2 do
    local idx = tonumber(raw[j])
    if idx >= k - b and idx <= k then total = total + tonumber(raw[j + 1]) end
  end
  local cap = math.max(1, math.floor(limit + 1e-9)) + math.floor(md)
  local add = math.min(d, math.max(cap - total, 0))
  if add <= 0 then return 0 end
  redis.call('HINCRBY', key, ka, add)
  if tonumber(redis.call('PTTL', key)) < 0 then -- recreated: void when ka weighs nothing
    redis.call('PEXPIRE', key, pxms((ka + b + 1) * w - now))
  end
  return add
end

ALGO[5] = {check = sliding_check, commit = sliding_commit, refund = sliding_refund, settle = sliding_settle}
