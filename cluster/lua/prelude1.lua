-- prelude1.lua: prelude.lua for a request of exactly one rule, the common
-- case (one cluster rule per level). Same calling convention and the same
-- names for the algorithm files (ALGO, param, pxms, now), without the
-- tables and the loop that locate each rule's parameters in ARGV: rule 1's
-- code is ARGV[2] and its parameters follow it.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

-- BEGIN rendered from cluster/algorithms.go; do not edit (go test ./cluster -run TestLuaTableMatches -update)
-- Algorithm codes: 1 token_bucket, 2 warm_up, 3 leaky_bucket, 4 fixed_window, 5 sliding_window, 6 sliding_log, 7 concurrency.
local NALGO = 7
-- END rendered

local ALGO = {}
local CODE1 = tonumber(ARGV[2])
if CODE1 == nil or CODE1 < 1 or CODE1 > NALGO or #KEYS ~= 1 then
  return redis.error_reply('flowgate: unknown algorithm ' .. tostring(ARGV[2]) .. ' or not one key')
end

-- param returns parameter j of rule i (always 1 here) as a number.
local function param(i, j)
  return tonumber(ARGV[2 + j])
end

-- pxms: see prelude.lua.
local function pxms(us)
  return math.max(1, math.ceil(us / 1000))
end

-- NEVER: see prelude.lua.
local NEVER = {ok = 0, never = 1, left = 0, retry = 0, wait = 0, avail = 0, reset = 0}
