-- acquire1.lua: acquire.lua for one rule (assembled after prelude1.lua):
-- check, then commit if it passed. Same reply.

local n = tonumber(ARGV[1])
local a = ALGO[CODE1]
local st = a.check(1, KEYS[1], n)
if st.never == 1 then return {0, 0, 0, 0, -1, now} end
if st.ok ~= 1 then
  return {0, 0, math.floor(math.max(0, st.left)), 0, math.floor(math.max(0, math.ceil(st.retry))), now}
end
a.commit(1, KEYS[1], n, st)
return {1, -1, math.floor(math.max(0, st.rem)), math.floor(math.ceil(st.wait)), 0, now}
