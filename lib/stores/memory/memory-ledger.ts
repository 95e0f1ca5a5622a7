import type { RefundRequest } from '../store.interface';

// The refund ledger of a caller key in a `MemoryStore`, mirroring `lua/lib/ledger.lua` and
// `lua/lib/refund-frame.lua`: which spends were refunded, adjusted or registered, so that each is
// settled at most once, and how far back it remembers.

/** A caller key's refund ledger, as `lua/lib/ledger.lua` keeps it in Redis. */
export interface Ledger {
  /**
   * Members and the instants of their spends, as in Redis: "<id>" refunded, "<id>=<cost>"
   * adjusted, "+<id>" registered when spent and not settled yet, "+<id>=<cost>" such a spend
   * adjusted.
   */
  readonly members: Map<string, number>;
  /** The last reset's mark (see `lua/reset/reset.lua`). */
  resetMark?: number;
  floor?: number;
  /** The longest policy lifetime it was written with: ids are pruned by it (see `remember`). */
  lifetime?: number;
}

/** At most this many ids per caller key, registrations included (see `lua/lib/ledger.lua`). */
const LEDGER_CAP = 124;

/** What a ledger holds of one spend (see `ledgerEntry` in `lua/lib/refund-frame.lua`). */
export interface LedgerEntry {
  /** Refunded ("<id>"). */
  readonly refunded: boolean;
  /** Registered when spent and not settled yet ("+<id>", or "+<id>=<cost>" once adjusted). */
  readonly pending: boolean;
  /** Its adjustment, if it was adjusted: the new cost and the member recording it. */
  readonly adjusted?: { cost: number; member: string };
}

/** Whether a refund must give nothing back; mirrors `settled` in `lua/lib/refund-frame.lua`. */
export function settled(
  ledger: Ledger | undefined,
  request: RefundRequest,
  k: number,
  now: number,
  lifetime: number,
  entry: LedgerEntry | undefined,
): boolean {
  if (entry?.refunded === true) return true;
  if (now - request.at > lifetime) return true; // it weighs on nothing any more (or might not)
  const mark = ledger?.resetMark;
  if (mark !== undefined && mark > (request.resetMarks?.[k] ?? 0)) return true; // reset since
  // Beyond the ledger's memory, unless it holds the spend as registered and unsettled.
  return entry?.pending !== true && ledger?.floor !== undefined && request.at <= ledger.floor;
}

/** The ledger's members at the spend's instant that name it (one pass, as Redis reads them). */
export function ledgerEntry(ledger: Ledger, spendId: string, at: number): LedgerEntry {
  const plain = `${spendId}=`;
  const mark = `+${spendId}`;
  const pendingPrefix = `${mark}=`;
  let refunded = false;
  let pending = false;
  let adjusted: { cost: number; member: string } | undefined;
  for (const [member, instant] of ledger.members) {
    if (instant !== at) continue;
    if (member === spendId) refunded = true;
    else if (member === mark) pending = true;
    else if (member.startsWith(plain)) {
      adjusted = { cost: Number(member.slice(plain.length)), member };
    } else if (member.startsWith(pendingPrefix)) {
      adjusted = { cost: Number(member.slice(pendingPrefix.length)), member };
      pending = true;
    }
  }
  return { refunded, pending, ...(adjusted && { adjusted }) };
}

/**
 * Writes a member; prunes ids past the longest lifetime the ledger was written with (never by the
 * limits one receipt names: see `tidy` in `lua/lib/ledger.lua`) and trims to the cap as
 * `trimOldest` there does: settled ids first, oldest first (by instant, then member: Redis's
 * order); then registrations ("+…"), the last ones in Redis's order of their scores -(at + 1)
 * (latest instant first, then member). The floor rises to the latest instant taken off, a
 * registration never adjusted ("+<id>") excepted.
 */
export function remember(
  ledger: Ledger,
  member: string,
  at: number,
  now: number,
  lifetime: number,
): void {
  ledger.lifetime = Math.max(lifetime, ledger.lifetime ?? 0);
  ledger.members.set(member, at);
  for (const [id, instant] of ledger.members) {
    if (instant < now - ledger.lifetime) ledger.members.delete(id);
  }
  let extra = ledger.members.size - LEDGER_CAP;
  if (extra <= 0) return;
  const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  const ids = [...ledger.members]
    .filter(([id]) => !id.startsWith('+'))
    .sort(([a, x], [b, y]) => x - y || byName(a, b));
  for (const [id, instant] of ids) {
    if (extra === 0) return;
    extra--;
    ledger.members.delete(id);
    ledger.floor = Math.max(ledger.floor ?? -Infinity, instant);
  }
  const registrations = [...ledger.members]
    .filter(([id]) => id.startsWith('+'))
    .sort(([a, x], [b, y]) => y - x || byName(a, b));
  for (const [id, instant] of registrations.slice(Math.max(registrations.length - extra, 0))) {
    ledger.members.delete(id);
    if (id.includes('=')) ledger.floor = Math.max(ledger.floor ?? -Infinity, instant);
  }
}
