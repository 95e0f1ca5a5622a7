--[[
fleet/beat.lua: one process's heartbeat in the fleet of processes that share a prefix (see
lib/stores/fleet.ts). The fleet is one sorted set: each member scored by its latest beat (Redis
TIME). A beat drops the members not heard of for `ttl` ms, records the caller's beat, and answers
the live fleet's size, the caller's place in it (members in byte order), and the oldest latest
beat of the other members: once that is after the caller joined, every other member has seen it
in the fleet. A beat with `ttl` 0 leaves the fleet.

KEYS   [1] the fleet (<prefix>fleet)
ARGV   [1] now (always '': the fleet lives on Redis TIME)  [2] expiry offset (unused)
       [3] the member's name  [4] ttl ms (0: leave)
Return { size, rank (0-based, in byte order), now, 1 when the member was not in the fleet,
         the oldest latest beat of the other members (-1: none) }
]]
local function main()
  local key, member, ttl = KEYS[1], ARGV[3], tonumber(ARGV[4])
  if ttl <= 0 then
    rcall('ZREM', key, member)
    return { rcall('ZCARD', key), 0, now, 0, -1 }
  end
  rcall('ZREMRANGEBYSCORE', key, '-inf', '(' .. (now - ttl))
  local added = rcall('ZADD', key, now, member)
  -- Every member lapses by now + ttl: the set goes with its last member.
  rcall('PEXPIRE', key, ttl)
  local members = rcall('ZRANGE', key, 0, -1, 'WITHSCORES')
  local names, oldest = {}, -1
  for i = 1, #members, 2 do
    local name, beat = members[i], tonumber(members[i + 1])
    names[#names + 1] = name
    if name ~= member and (oldest < 0 or beat < oldest) then oldest = beat end
  end
  table.sort(names)
  local rank = 0
  for i = 1, #names do
    if names[i] == member then
      rank = i - 1
      break
    end
  end
  return { #names, rank, now, added, oldest }
end
