-- release.lua: gives back ARGV[1] permits at every rule passed: the
-- engine undoing a call a later level refused, a lease returning what it
-- did not spend, or concurrency permits released on Exit (the nonce then
-- is the acquiring call's nonce). Reply: 1.
--
-- A lease's return sends ARGV[1] as "<permits>@<us>", the Redis time its
-- batch was taken (lease.lua's reply): a sliding window must take them out
-- of the sub-window they were counted in, or they stay counted there while
-- a newer sub-window loses permits it never had (a dip, then refusals).

local n, at = string.match(ARGV[1], '^(%d+)@(%d+)$')
if n == nil then n, at = ARGV[1], now end
n, at = tonumber(n), tonumber(at)
local nr = NRULES
for i = 1, nr do ALGO[CODE[i]].refund(i, KEYS[i], n, at) end
return 1
