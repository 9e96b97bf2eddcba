-- acquire.lua: decides every rule of one key at once. check runs for every
-- rule first and nothing is counted unless all pass; then commit counts the
-- call at each. Reply (integers only):
--   {allowed 1/0, index of the refusing rule (0-based) or -1,
--    permits left (floor; the fewest over the rules), wait us, retry-after us
--    (-1: never, the request is more than the rule can ever grant),
--    now in us (when the call was counted: a settlement at Exit adjusts
--    the window it fell in, see settle.lua)}

local n = tonumber(ARGV[1])
local nr = NRULES
local sts = {}
local wait, rem = 0, nil
for i = 1, nr do
  local st = ALGO[CODE[i]].check(i, KEYS[i], n)
  if st.never == 1 then return {0, i - 1, 0, 0, -1, now} end
  if st.ok ~= 1 then
    return {0, i - 1, math.floor(math.max(0, st.left)), 0, math.floor(math.max(0, math.ceil(st.retry))), now}
  end
  sts[i] = st
  wait = math.max(wait, st.wait)
  if rem == nil or st.rem < rem then rem = st.rem end
end
for i = 1, nr do ALGO[CODE[i]].commit(i, KEYS[i], n, sts[i]) end
return {1, -1, math.floor(math.max(0, rem or 0)), math.floor(math.ceil(wait)), 0, now}
