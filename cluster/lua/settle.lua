-- settle.lua: settles a call that ran at its actual cost, at Exit, in one
-- atomic step for every rule of one key (flow.TokenRequest.Settle).
-- ARGV[1] is "<d>@<at>@<n>": d the actual cost minus the n permits the call
-- reserved (negative: it cost less), at the Redis time the call was
-- counted (us; 0 unknown: windows then settle nothing). After the rules'
-- parameters come their maxDebts (permits, one per rule), then the nonce
-- when the rules keep members (prelude.lua).
--
-- Each algorithm that can carry a settlement registers
-- settle(i, key, d, at, md) -> permits moved: d > 0 charged (at most d, as
-- md allows), d < 0 given back (at most -d). A concurrency rule's permits
-- are released by the nonce, as release.lua does on Exit. The nonce names
-- a sliding log's charged entries too: the call's concurrency lease, or
-- one of the settling call's own.
-- Reply: {permits charged, permits given back, permits not charged}, each
-- summed over the rules.

local d, at, n = string.match(ARGV[1], '^(%-?%d+)@(%d+)@(%d+)$')
if d == nil then return redis.error_reply('flowgate: settle: bad argument ' .. tostring(ARGV[1])) end
d, at, n = tonumber(d), tonumber(at), tonumber(n)
local nr = NRULES
local base = AT[nr] + NPARAM[CODE[nr]] -- the last rule parameter's index
local charged, back, forgiven = 0, 0, 0
for i = 1, nr do
  local a = ALGO[CODE[i]]
  if CODE[i] == 7 then
    if #ARGV[#ARGV] > 0 then a.refund(i, KEYS[i], n, at) end
  elseif a.settle ~= nil and d ~= 0 then
    local moved = a.settle(i, KEYS[i], d, at, tonumber(ARGV[base + i]) or 0)
    if d > 0 then
      charged, forgiven = charged + moved, forgiven + d - moved
    else
      back = back + moved
    end
  elseif d > 0 then
    forgiven = forgiven + d
  end
end
return {math.floor(charged), math.floor(back), math.floor(forgiven)}
