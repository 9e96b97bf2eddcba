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

ALGO[6] = {check = log_check, commit = log_commit, refund = log_refund}
