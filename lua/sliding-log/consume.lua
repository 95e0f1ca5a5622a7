--[[
sliding-log/consume.lua: exact count over the trailing window; check every limit on every key and
spend on all of them only if all allow.

State per (key, limit): a sorted set with one member per unit spent, scored by the instant of the
spend. Members are "<spend id>" (cost 1) or "<spend id>.<n>" (n = 1..cost), so spends in the same
millisecond never collide and a refund removes exactly its own. Counted: scores in (now - window,
now]. Older members are pruned when the next spend writes; the key expires one window after its
newest member. Memory grows with the limit: O(limit) members per key.

KEYS, ARGV and the reply: see lib/consume-frame.lua (burst is not used; a spend id is required).
]]
--#include sliding-log/model.lua
--#include lib/consume-frame.lua
