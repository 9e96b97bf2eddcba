-- heartbeat.lua: one token server instance says it is alive and learns how
-- many are. KEYS[1] is a sorted set of instance ids scored by when their
-- heartbeat runs out (Redis time, us). ARGV[1] id, ARGV[2] TTL (us),
-- ARGV[3] 1 to join, 0 to leave. Reply: live instances (including this one
-- when joining). The count reads low for a while after a restart or
-- FLUSHALL emptied the set, or after an instance missed its beats for a
-- TTL: the Go side (instanceTrust) decides when to believe a drop.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now))
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
return redis.call('ZCARD', KEYS[1])
