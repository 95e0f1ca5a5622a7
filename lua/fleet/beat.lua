--[[
fleet/beat.lua: one process's heartbeat in the fleet of processes that share a prefix (see
lib/stores/fleet.ts). The fleet is one sorted set: each member scored by the instant (Redis TIME)
its announcement lapses. A beat drops lapsed members, announces the caller until `ttl` ms from
now, and answers the live fleet's size and the caller's place in it (members in byte order): what
`failMode: 'memory'` divides a limit by while Redis fails. A beat with `ttl` 0 leaves the fleet.

KEYS   [1] the fleet (<prefix>fleet)
ARGV   [1] now (always '': the fleet lives on Redis TIME)  [2] expiry offset (unused)
       [3] the member's name  [4] ttl ms (0: leave)
Return { size, rank (0-based, in byte order), now, 1 when the member was not in the fleet }
]]
local function main()
  local key, member, ttl = KEYS[1], ARGV[3], tonumber(ARGV[4])
  rcall('ZREMRANGEBYSCORE', key, '-inf', now)
  if ttl <= 0 then
    rcall('ZREM', key, member)
    return { rcall('ZCARD', key), 0, now, 0 }
  end
  local added = rcall('ZADD', key, now + ttl, member)
  -- Every member lapses by now + ttl: the set goes with its last member.
  rcall('PEXPIRE', key, ttl)
  local members = rcall('ZRANGE', key, 0, -1)
  table.sort(members)
  local rank = 0
  for i = 1, #members do
    if members[i] == member then
      rank = i - 1
      break
    end
  end
  return { #members, rank, now, added }
end
