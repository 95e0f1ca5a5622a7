--[[
fleet/beat.lua: one process's heartbeat in the fleet of processes that share a prefix (see
lib/stores/fleet.ts). The fleet is one sorted set: each member scored by its latest beat (Redis
TIME), and, under '~ack~<member>', by when the latest beat it was answered ran (the view it holds
is no older). A beat drops the entries not heard of for `ttl` ms, records the caller's beat and
answer, and answers the live fleet's size, the caller's place in it (members in byte order), and
the oldest latest answered beat of the other members (0 for a member with none): once that is
after the caller joined, every other member holds a view that counts it (a beat that ran but whose
reply was lost counts for nothing). A beat with `ttl` 0 leaves the fleet.

KEYS   [1] the fleet (<prefix>fleet)
ARGV   [1] now (always '': the fleet lives on Redis TIME)  [2] expiry offset (unused)
       [3] the member's name  [4] ttl ms (0: leave)
       [5] when the member's latest answered beat ran (Redis TIME), or '' for none
Return { size, rank (0-based, in byte order), now, 1 when the member was not in the fleet,
         the oldest latest answered beat of the other members (-1: none answered, or no other) }
]]
local ACK = '~ack~'

local function main()
  local key, member, ttl = KEYS[1], ARGV[3], tonumber(ARGV[4])
  if ttl <= 0 then
    rcall('ZREM', key, member, ACK .. member)
    return { rcall('ZCARD', key), 0, now, 0, -1 }
  end
  rcall('ZREMRANGEBYSCORE', key, '-inf', '(' .. (now - ttl))
  local added = rcall('ZADD', key, now, member)
  local acked = tonumber(ARGV[5] or '')
  if acked then rcall('ZADD', key, 'GT', acked, ACK .. member) end
  -- Every member lapses by now + ttl: the set goes with its last member.
  rcall('PEXPIRE', key, ttl)
  local entries = rcall('ZRANGE', key, 0, -1, 'WITHSCORES')
  local names, acks = {}, {}
  for i = 1, #entries, 2 do
    local name = entries[i]
    if string.sub(name, 1, #ACK) == ACK then
      acks[string.sub(name, #ACK + 1)] = tonumber(entries[i + 1])
    else
      names[#names + 1] = name
    end
  end
  table.sort(names)
  local rank, oldest, others = 0, nil, false
  for i = 1, #names do
    local name = names[i]
    if name == member then
      rank = i - 1
    else
      others = true
      local ack = acks[name] or 0 -- none answered yet: before anyone joined
      if oldest == nil or ack < oldest then oldest = ack end
    end
  end
  if not others then oldest = -1 end
  return { #names, rank, now, added, oldest }
end
