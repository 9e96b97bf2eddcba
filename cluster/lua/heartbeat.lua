-- heartbeat.lua: one token server instance says it is alive and learns how
-- many are. KEYS[1] is a sorted set of instance ids scored by when their
-- heartbeat runs out (Redis time, us). ARGV[1] id, ARGV[2] TTL (us),
-- ARGV[3] 1 to join, 0 to leave. Reply: {live instances (including this one
-- when joining), 1 if this instance's own entry was there before, else 0}.
-- A joining instance that finds its entry gone learns that the set was
-- wiped (a restart, FLUSHALL) or that it missed its TTL: the count may be
-- low until the others beat again.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now))
local present = 0
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  present = 1
end
if ARGV[3] == '1' then
  redis.call('ZADD', KEYS[1], string.format('%d', now + ttl), ARGV[1])
else
  redis.call('ZREM', KEYS[1], ARGV[1])
end
-- The set outlives only its freshest heartbeat.
local newest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if newest[2] ~= nil then
  redis.call('PEXPIRE', KEYS[1], string.format('%d', math.max(1, math.ceil((tonumber(newest[2]) - now) / 1000))))
end
return {tonumber(redis.call('ZCARD', KEYS[1])), present}
