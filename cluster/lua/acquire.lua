-- acquire.lua: decides every rule of one key at once. check runs for every
-- rule first and nothing is counted unless all pass; then commit counts the
-- call at each. Reply (integers only):
--   {allowed 1/0, index of the refusing rule (0-based) or -1,
--    permits left (floor; the fewest over the rules), wait us, retry-after us}

local n = tonumber(ARGV[3])
local nr = tonumber(ARGV[4])
local sts = {}
local wait, rem = 0, nil
for i = 1, nr do
  local a = ALGO[algo(i)]
  if a == nil then return redis.error_reply('flowgate: unknown algorithm ' .. tostring(algo(i))) end
  local st = a.check(i, KEYS[i], n)
  if st.ok ~= 1 then
    return {0, i - 1, int(math.max(0, st.left)), 0, int(math.max(0, math.ceil(st.retry)))}
  end
  sts[i] = st
  wait = math.max(wait, st.wait)
  if rem == nil or st.rem < rem then rem = st.rem end
end
for i = 1, nr do ALGO[algo(i)].commit(i, KEYS[i], n, sts[i]) end
return {1, -1, int(math.max(0, rem or 0)), int(math.ceil(wait)), 0}
