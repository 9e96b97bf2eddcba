-- sliding_log.lua (code 6): exact. One sorted-set member per admitted
-- permit, scored by its admission time; the window is (now - window, now].
-- Members are the call's nonce plus an index, so two calls in the same
-- microsecond never collide; refused calls are not logged.
--
-- Parameters: p1 window (us), p2 limit (whole permits).

local function log_check(i, key, n)
  local win, limit = param(i, 1), param(i, 2)
  if n > limit then return NEVER end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - win) -- cleanup only
  local c = tonumber(redis.call('ZCARD', key))
  local st = {left = math.max(0, limit - c), reset = 0}
  st.avail = st.left
  if c > 0 then
    local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    st.reset = tonumber(newest[2]) + win - now
  end
  if c + n <= limit then
    st.ok, st.wait, st.retry, st.rem = 1, 0, 0, limit - c - n
    return st
  end
  st.ok, st.wait, st.retry = 0, 0, 0
  -- The (c+n-limit)-th oldest entry must leave first.
  local e = redis.call('ZRANGE', key, c + n - limit - 1, c + n - limit - 1, 'WITHSCORES')
  if e[2] ~= nil then st.retry = math.max(1, tonumber(e[2]) + win - now) end
  return st
end

local function log_commit(i, key, n, st)
  zadd_all(key, now, members(n))
  -- The newest entry leaves the window last: it decides the key's life.
  redis.call('PEXPIRE', key, pxms(param(i, 1)))
end

-- log_refund removes this nonce's members (a lease giving back what it did
-- not spend); a caller without the nonce (the engine undoing a call a later
-- level refused) gets the newest members removed, which counts the same.
local function log_refund(i, key, n)
  local removed = zrem_all(key, members(n))
  if removed < n then redis.call('ZPOPMAX', key, n - removed) end
end

-- log_settle adjusts the call's entries while they still count (see
-- settle.lua): a charge adds entries scored at, the call's admission time,
-- named by the settling call's nonce (":s" keeps them apart from the
-- acquiring call's), so long as the window holds at most the limit (p2)
-- plus md (maxDebt); a refund removes up to -d entries scored at (entries
-- of one moment are interchangeable). Returns the permits moved.
local function log_settle(i, key, d, at, md)
  local win = param(i, 1)
  if at <= now - win then return 0 end -- left the window (or unknown)
  if d < 0 then
    local m = redis.call('ZRANGEBYSCORE', key, at, at, 'LIMIT', 0, -d)
    if #m == 0 then return 0 end
    return zrem_all(key, m)
  end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - win) -- cleanup only
  local c = tonumber(redis.call('ZCARD', key))
  local k = math.min(d, math.max(param(i, 2) + math.floor(md) - c, 0))
  if k <= 0 then return 0 end
  local m, base = {}, ARGV[#ARGV] .. ':s'
  for j = 1, k do m[j] = base .. j end
  zadd_all(key, at, m)
  if tonumber(redis.call('PTTL', key)) < pxms(at + win - now) then
    redis.call('PEXPIRE', key, pxms(at + win - now))
  end
  return k
end

ALGO[6] = {check = log_check, commit = log_commit, refund = log_refund, settle = log_settle}
