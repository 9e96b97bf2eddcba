-- Sets every key in KEYS to ARGV[1] and returns how many it set. With keys in
-- different hash slots a cluster node refuses it with CROSSSLOT before it runs.
for _, k in ipairs(KEYS) do
  redis.call('SET', k, ARGV[1])
end
return #KEYS
