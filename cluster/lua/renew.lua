-- renew.lua: extends the concurrency leases an instance still holds on one
-- key (one call per key: keys of different users live in different slots).
-- KEYS[1] the concurrency key, ARGV[1] the TTL (us), then pairs of
-- (nonce, permits). Members already expired or released (through another
-- replica, say) are not brought back. Reply: per pair, how many of its
-- members were still there and renewed; 0 tells the caller to forget the
-- lease.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local ttl = tonumber(ARGV[1])
local score = string.format('%d', now + ttl)
local out = {}
for a = 2, #ARGV, 2 do
  local renewed = 0
  for j = 1, tonumber(ARGV[a + 1]) do
    local m = ARGV[a] .. ':' .. j
    -- Existence, not ZADD's changed count: a renewal in the microsecond
    -- of the acquire changes no score, yet the member is live.
    if redis.call('ZSCORE', KEYS[1], m) then
      redis.call('ZADD', KEYS[1], 'XX', score, m)
      renewed = renewed + 1
    end
  end
  out[#out + 1] = renewed
end
local ms = math.max(1, math.ceil(ttl / 1000))
if tonumber(redis.call('PTTL', KEYS[1])) < ms then
  redis.call('PEXPIRE', KEYS[1], string.format('%d', ms))
end
return out
