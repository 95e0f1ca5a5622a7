--[[
concurrency/consume.lua: leases in flight. At most `limit` units admitted and not yet released per
key; `window` is the lease: a lease not released within it expires on its own, so a process that
crashed while holding one frees it after `window`.

State per (key, limit): a sorted set with one member per unit leased, scored by the instant it was
taken (or last extended, see extend.lua), exactly as a sliding log stores its spends: a lease
counts while its score is in (now - window, now]. A release (refund.lua) removes the members, so
the slots free at once; `retryAfterMs` is when enough leases expire on their own, an upper bound
(a release can come sooner).

KEYS, ARGV and the reply: see lib/consume-frame.lua (burst is not used; a spend id is required).
]]
--#include concurrency/model.lua
--#include lib/consume-frame.lua
