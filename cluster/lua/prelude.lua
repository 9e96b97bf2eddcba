-- prelude.lua: shared by every flowgate script. The Go side assembles one
-- script from this prelude, every algorithm file and one main (acquire.lua,
-- release.lua or lease.lua), so all the cluster rules of one key are decided
-- in a single atomic call. (A request of one rule runs prelude1.lua and
-- acquire1.lua instead: the same algorithm files, less bookkeeping.)
--
-- Calling convention (built by cluster/call.go):
--   KEYS[i]      the state key of rule i; all share one {hash tag}
--   ARGV[1]      tokens asked for (or, for lease.lua, the most to take)
--   then per rule (as many as KEYS): its algorithm code and that
--   algorithm's parameters p1.. (see each algorithm's file)
--   last, only for sliding_log and concurrency: a nonce unique per call
--   ("<instance id>:<sequence>") naming their sorted-set members
--
-- Time is Redis's own clock, in integer microseconds: every instance sees
-- the same now however wrong its own clock is. Since Redis 5 scripts are
-- replicated by their effects, so reading TIME is allowed without
-- redis.replicate_commands() (a deprecated no-op in Redis 7).

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

-- BEGIN rendered from cluster/algorithms.go; do not edit (go test ./cluster -run TestLuaTableMatches -update)
-- Algorithm codes: 1 token_bucket, 2 warm_up, 3 leaky_bucket, 4 fixed_window, 5 sliding_window, 6 sliding_log, 7 concurrency.
-- NPARAM[code]: how many parameters follow the code in ARGV.
local NPARAM = {4, 7, 4, 2, 3, 2, 2}
-- END rendered

local ALGO = {}
local NRULES = #KEYS
local CODE, AT = {}, {} -- rule i: algorithm code, ARGV index of its code
do
  local at = 2
  for i = 1, NRULES do
    local c = tonumber(ARGV[at])
    -- NPARAM[c] is nil for anything but a code 1..NALGO (1.5 included).
    local np = c and NPARAM[c]
    if np == nil then
      return redis.error_reply('flowgate: unknown algorithm ' .. tostring(ARGV[at]))
    end
    CODE[i], AT[i] = c, at
    at = at + 1 + np
  end
end

-- param returns parameter j of rule i as a number. (Every function here
-- is a closure built on every call, so the prelude keeps few.)
local function param(i, j)
  return tonumber(ARGV[AT[i] + j])
end

-- Numbers go to redis.call as they are: an integral Lua number below 2^53
-- (every microsecond time, count and score here) reaches Redis as plain
-- digits, so only values concatenated into strings need string.format.

-- pxms turns a duration in microseconds into whole milliseconds for
-- PEXPIRE or SET PX (a non-integer errors, after earlier writes happened):
-- at least 1, rounded up so a key never expires before its state is void.
-- An integral Lua number reaches Redis as plain digits (below 2^53), so no
-- string.format is needed.
local function pxms(us)
  return math.max(1, math.ceil(us / 1000))
end

-- NEVER is a check's answer to a request for more permits than the rule
-- can ever grant at once (its p<most> parameter): refused for good, with
-- nothing read or written; the reply's retry-after is then -1.
local NEVER = {ok = 0, never = 1, left = 0, retry = 0, wait = 0, avail = 0, reset = 0}

-- Each algorithm file registers ALGO[code] = {check, commit, refund}:
--   check(i, key, n)      -> st: st.ok (1/0), st.wait and st.retry (us),
--                            NEVER when n is more than the rule ever grants,
--                            st.left (permits left before this call),
--                            st.avail (permits a lease may take now),
--                            st.reset (us until the state is fully restored),
--                            plus what commit needs. Writes nothing that counts.
--   commit(i, key, n, st) takes n permits and sets the key's expiry.
--   refund(i, key, n, at) gives n permits back as far as still possible;
--                         at: us when they were taken (release.lua).
