-- zset.lua: sorted-set helpers of sliding_log.lua and concurrency.lua,
-- assembled only into scripts that use one of them.

-- members returns the sorted-set members of this call's n tokens.
local function members(n)
  local m, base = {}, ARGV[#ARGV] -- the nonce
  for j = 1, n do m[j] = base .. ':' .. j end
  return m
end

-- zadd_all adds members at score in chunks, as unpack has a stack limit.
local function zadd_all(key, score, m)
  local i = 1
  while i <= #m do
    local args = {}
    for j = i, math.min(#m, i + 999) do
      args[#args + 1] = score
      args[#args + 1] = m[j]
    end
    redis.call('ZADD', key, unpack(args))
    i = i + 1000
  end
end

-- zrem_all removes members in chunks and returns how many were removed.
local function zrem_all(key, m)
  local removed, i = 0, 1
  while i <= #m do
    local part = {}
    for j = i, math.min(#m, i + 999) do part[#part + 1] = m[j] end
    removed = removed + tonumber(redis.call('ZREM', key, unpack(part)))
    i = i + 1000
  end
  return removed
end
