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

-- leaky_settle moves the queue's end (see settle.lua): a charge pushes the
-- latest slot later by the extra's spacing (from now when the queue is
-- empty), at most md (maxDebt) permits' spacing past now; a refund pulls
-- it earlier by the unused spacing, never before now, so no idle time is
-- banked as a burst. Returns the permits moved.
local function leaky_settle(i, key, d, at, md)
  local spacing = param(i, 1)
  local last = tonumber(redis.call('GET', key))
  if d < 0 then
    if last == nil or last <= now then return 0 end -- nothing queued
    local nextl = math.max(last - math.floor(-d * spacing), now)
    redis.call('SET', key, nextl, 'KEEPTTL')
    return math.min(-d, math.floor((last - nextl) / spacing))
  end
  local from, limit = math.max(last or now, now), now + math.ceil(md * spacing)
  if from >= limit then return 0 end
  local nextl, done = from + math.floor(d * spacing), d
  if nextl > limit then nextl, done = limit, math.floor((limit - from) / spacing) end
  redis.call('SET', key, nextl, 'PX', pxms(nextl - now + param(i, 3)))
  return done
end

ALGO[3] = {check = leaky_check, commit = leaky_commit, refund = leaky_refund, settle = leaky_settle}
