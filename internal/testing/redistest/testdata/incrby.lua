-- Adds ARGV[1] to the integer at KEYS[1] and returns the new value.
return redis.call('INCRBY', KEYS[1], ARGV[1])
