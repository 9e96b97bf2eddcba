-- concurrency.lua (code 7): an in-flight cap across instances. Each permit
-- is a lease: a sorted-set member (nonce:index) scored by its expiry, so a
-- crashed instance's permits fall out after the lease TTL instead of being
-- held forever. Release removes them; a live holder may renew them.
--
-- Parameters: p1 limit (whole permits), p2 lease TTL (us).

local function conc_check(i, key, n)
  local limit = param(i, 1)
  if n > limit then return NEVER end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now) -- expired leases
  local c = tonumber(redis.call('ZCARD', key))
  local st = {left = math.max(0, limit - c), avail = 0, reset = 0, wait = 0, retry = 0}
  if c + n <= limit then
    st.ok, st.rem = 1, limit - c - n
  else
    st.ok = 0
  end
  return st
end

local function conc_commit(i, key, n, st)
  local ttl = param(i, 2)
  zadd_all(key, now + ttl, members(n))
  -- The key lives as long as its longest lease.
  if tonumber(redis.call('PTTL', key)) < math.max(1, math.ceil(ttl / 1000)) then
    redis.call('PEXPIRE', key, pxms(ttl))
  end
end

local function conc_refund(i, key, n)
  zrem_all(key, members(n))
end

ALGO[7] = {check = conc_check, commit = conc_commit, refund = conc_refund}
