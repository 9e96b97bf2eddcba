-- renew.lua: extends the concurrency leases an instance still holds on one
-- key (one call per key: keys of different users live in different slots).
-- KEYS[1] the concurrency key, ARGV[1] the TTL (us), then pairs of
-- (nonce, permits). Members already expired or released are not brought
-- back (ZADD XX). Reply: how many members were renewed.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local ttl = tonumber(ARGV[1])
local score = string.format('%d', now + ttl)
local renewed = 0
for a = 2, #ARGV, 2 do
  for j = 1, tonumber(ARGV[a + 1]) do
    renewed = renewed + tonumber(redis.call('ZADD', KEYS[1], 'XX', 'CH', score, ARGV[a] .. ':' .. j))
  end
end
local ms = math.max(1, math.ceil(ttl / 1000))
if tonumber(redis.call('PTTL', KEYS[1])) < ms then
  redis.call('PEXPIRE', KEYS[1], string.format('%d', ms))
end
return renewed
