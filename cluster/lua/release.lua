-- release.lua: gives back ARGV[3] permits at every rule passed: the
-- engine undoing a call a later level refused, a lease returning what it
-- did not spend, or concurrency permits released on Exit (ARGV[1..2] then
-- carry the acquiring call's nonce). Reply: 1.

local n = tonumber(ARGV[3])
local nr = tonumber(ARGV[4])
for i = 1, nr do ALGO[algo(i)].refund(i, KEYS[i], n) end
return 1
