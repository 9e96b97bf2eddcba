-- prelude.lua: shared by every flowgate script. The Go side assembles one
-- script from this prelude, every algorithm file and one main (acquire.lua,
-- release.lua or lease.lua), so all the cluster rules of one key are decided
-- in a single atomic call.
--
-- Calling convention (built by cluster/request.go):
--   KEYS[i]      the state key of rule i; all share one {hash tag}
--   ARGV[1]      instance id, ARGV[2] call sequence: together a nonce
--                unique per call (sliding-log and lease members)
--   ARGV[3]      tokens asked for (or, for lease.lua, the most to take)
--   ARGV[4]      number of rules n
--   then 7 values per rule: algorithm code, then p1..p6 (see each algorithm)
--
-- Time is Redis's own clock, in integer microseconds: every instance sees
-- the same now however wrong its own clock is. Since Redis 5 scripts are
-- replicated by their effects, so reading TIME is allowed without
-- redis.replicate_commands() (a deprecated no-op in Redis 7).

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local ALGO = {}
local NPARAM = 7

-- param returns parameter j (1..6) of rule i as a number.
local function param(i, j)
  return tonumber(ARGV[4 + (i - 1) * NPARAM + 1 + j])
end

local function algo(i)
  return tonumber(ARGV[4 + (i - 1) * NPARAM + 1])
end

-- ceil_ms turns a duration in microseconds into whole milliseconds for
-- PEXPIRE (which errors on a non-integer, after earlier writes happened):
-- at least 1, rounded up so a key never expires before its state is void.
local function ceil_ms(us)
  return math.max(1, math.ceil(us / 1000))
end

-- int truncates toward zero: replies must be integers we computed, since
-- Redis would truncate a Lua number anyway.
local function int(x)
  if x >= 0 then return math.floor(x) end
  return -math.floor(-x)
end

-- nonce is unique per call across every instance.
local function nonce()
  return ARGV[1] .. ':' .. ARGV[2]
end

-- istr formats an integer for a Redis command: Redis would print a Lua
-- number with limited digits, and microsecond times need all sixteen.
local function istr(x)
  return string.format('%d', x)
end

-- fstr formats a fractional value (stored permits) so it reads back exactly.
local function fstr(x)
  return string.format('%.17g', x)
end

-- members returns the sorted-set members of this call's n tokens.
local function members(n)
  local m, base = {}, nonce()
  for j = 1, n do m[j] = base .. ':' .. j end
  return m
end

-- zadd_all adds members at score in chunks, as unpack has a stack limit.
local function zadd_all(key, score, m)
  local s = istr(score)
  local i = 1
  while i <= #m do
    local args = {}
    for j = i, math.min(#m, i + 999) do
      args[#args + 1] = s
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

-- Each algorithm file registers ALGO[code] = {check, commit, refund}:
--   check(i, key, n)      -> st: st.ok (1/0), st.wait and st.retry (us),
--                            st.left (permits left before this call),
--                            st.avail (permits a lease may take now),
--                            st.reset (us until the state is fully restored),
--                            plus what commit needs. Writes nothing that counts.
--   commit(i, key, n, st) takes n permits and sets the key's expiry.
--   refund(i, key, n)     gives n permits back as far as still possible.
