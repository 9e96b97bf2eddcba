-- release.lua: gives back ARGV[1] permits at every rule passed: the
-- engine undoing a call a later level refused, a lease returning what it
-- did not spend, or concurrency permits released on Exit (the nonce then
-- is the acquiring call's nonce). Reply: 1.

local n = tonumber(ARGV[1])
local nr = NRULES
for i = 1, nr do ALGO[CODE[i]].refund(i, KEYS[i], n) end
return 1
