import {
  type AuditEntry,
  type BoardBook,
  type BoardLockout,
  type BoardOutcome,
  type BoardRefusal,
  type BoardWrite,
  BOARD_KEEP_MS,
  cardCurrent,
  lockoutMember,
  lockoutOf,
  MAX_AUDIT,
  MAX_LOCKOUTS,
  MAX_REFUSED_KEYS,
  type PolicyCard,
  RATE_BUCKET_MS,
  type RateCount,
  REFUSAL_BUCKET_MS,
  refusalMember,
  refusalSpan,
  refusalOf,
  type RefusalKind,
  UNLOCK_MEMORY_MS,
} from './board-book';

/**
 * The ops board's book in this process's memory (`MemoryStore.board()`): what a one-process app
 * shows on its board. Same bounds and buckets as the Redis book, on the memory store's clock.
 */
export class MemoryBoardBook implements BoardBook {
  /** Bucket start → `outcome|policy` → count. */
  private readonly counts = new Map<number, Map<string, number>>();
  /** `kind\npolicy` → minute → member → count. */
  private readonly refused = new Map<string, Map<number, Map<string, number>>>();
  private readonly locks = new Map<string, { until: number; since: number }>();
  private readonly policies = new Map<string, PolicyCard>();
  private readonly entries: AuditEntry[] = [];
  /** Unlocks of the last {@link UNLOCK_MEMORY_MS}: lockout member → when (oldest first). */
  private readonly unlocked = new Map<string, number>();

  constructor(private readonly clock: () => number) {}

  now(): number {
    return Math.floor(this.clock());
  }

  record(write: BoardWrite): Promise<void> {
    const now = this.now();
    this.forget(now);
    if (write.counts.length > 0) {
      const start = now - (now % RATE_BUCKET_MS);
      let bucket = this.counts.get(start);
      if (!bucket) this.counts.set(start, (bucket = new Map<string, number>()));
      for (const { policy, outcome, count } of write.counts) {
        const field = `${outcome}|${policy}`;
        bucket.set(field, (bucket.get(field) ?? 0) + count);
      }
    }
    const minute = now - (now % REFUSAL_BUCKET_MS);
    for (const refusal of write.refusals) {
      const set = this.refusalSet(refusal.kind, refusal.policy, minute);
      const member = refusalMember(refusal);
      set.set(member, (set.get(member) ?? 0) + refusal.count);
    }
    for (const [, byMinute] of this.refused) {
      const set = byMinute.get(minute);
      if (set && set.size > MAX_REFUSED_KEYS) dropLowest(set, set.size - MAX_REFUSED_KEYS);
    }
    this.forgetUnlocks(now);
    for (const { policy, key, until, since, lastSeen } of write.lockouts) {
      const member = lockoutMember(policy, key);
      const unlockedAt = this.unlocked.get(member);
      if (unlockedAt !== undefined && (lastSeen ?? since) <= unlockedAt) continue;
      const held = this.locks.get(member);
      if (!held || held.until <= now)
        this.locks.set(member, { until, since: Math.min(since, now) });
      else if (until > held.until) held.until = until;
    }
    this.pruneLocks(now);
    for (const card of write.cards) this.policies.set(card.name, { ...card, publishedAt: now });
    return Promise.resolve();
  }

  rates(sinceMs: number): Promise<RateCount[]> {
    this.forget(this.now());
    const rows: RateCount[] = [];
    for (const [at, bucket] of this.counts) {
      if (at + RATE_BUCKET_MS <= sinceMs) continue;
      for (const [field, count] of bucket) {
        const bar = field.indexOf('|');
        const outcome = field.slice(0, bar) as BoardOutcome;
        rows.push({ at, policy: field.slice(bar + 1), outcome, count });
      }
    }
    return Promise.resolve(rows.sort((a, b) => a.at - b.at));
  }

  topRefusals(
    kind: RefusalKind,
    policies: readonly string[],
    minutes: number,
    top: number,
  ): Promise<BoardRefusal[]> {
    if (!(top >= 1)) return Promise.resolve([]);
    const now = this.now();
    this.forget(now);
    const from = now - (now % REFUSAL_BUCKET_MS) - (refusalSpan(minutes) - 1) * REFUSAL_BUCKET_MS;
    const rows: BoardRefusal[] = [];
    for (const policy of policies) {
      const sums = new Map<string, number>();
      for (const [minute, set] of this.refused.get(`${kind}\n${policy}`) ?? []) {
        if (minute < from) continue;
        for (const [member, count] of set) sums.set(member, (sums.get(member) ?? 0) + count);
      }
      const ranked = [...sums].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? 1 : -1));
      for (const [member, count] of ranked.slice(0, top)) {
        const row = refusalOf(policy, kind, member, count);
        if (row) rows.push(row);
      }
    }
    return Promise.resolve(rows);
  }

  lockouts(max: number): Promise<BoardLockout[]> {
    const now = this.now();
    this.pruneLocks(now);
    const rows: BoardLockout[] = [];
    for (const [member, { until, since }] of this.locks) {
      const row = lockoutOf(member, until, since);
      if (row) rows.push(row);
    }
    return Promise.resolve(rows.sort((a, b) => a.until - b.until).slice(0, max));
  }

  cards(): Promise<PolicyCard[]> {
    const now = this.now();
    for (const [name, card] of this.policies) {
      if (!cardCurrent(card, now)) this.policies.delete(name);
    }
    return Promise.resolve([...this.policies.values()]);
  }

  audit(count: number): Promise<AuditEntry[]> {
    if (!(count >= 1)) return Promise.resolve([]); // (slice(-0) would be all of them)
    return Promise.resolve(this.entries.slice(-count).reverse());
  }

  appendAudit(entry: Omit<AuditEntry, 'at'>): Promise<AuditEntry> {
    const stored: AuditEntry = { at: this.now(), ...entry };
    this.entries.push(stored);
    if (this.entries.length > MAX_AUDIT) this.entries.splice(0, this.entries.length - MAX_AUDIT);
    if (entry.action === 'unlock' && entry.policy !== undefined && entry.key !== undefined) {
      const member = lockoutMember(entry.policy, entry.key);
      this.locks.delete(member);
      this.forgetUnlocks(stored.at);
      this.unlocked.delete(member);
      this.unlocked.set(member, stored.at);
    }
    return Promise.resolve(stored);
  }

  private refusalSet(kind: RefusalKind, policy: string, minute: number): Map<string, number> {
    const name = `${kind}\n${policy}`;
    let byMinute = this.refused.get(name);
    if (!byMinute) this.refused.set(name, (byMinute = new Map<number, Map<string, number>>()));
    let set = byMinute.get(minute);
    if (!set) byMinute.set(minute, (set = new Map<string, number>()));
    return set;
  }

  /** Drops buckets older than {@link BOARD_KEEP_MS}. */
  private forget(now: number): void {
    for (const at of this.counts.keys()) if (at + BOARD_KEEP_MS <= now) this.counts.delete(at);
    for (const [name, byMinute] of this.refused) {
      for (const minute of byMinute.keys()) {
        if (minute + BOARD_KEEP_MS <= now) byMinute.delete(minute);
      }
      if (byMinute.size === 0) this.refused.delete(name);
    }
  }

  private forgetUnlocks(now: number): void {
    for (const [member, at] of this.unlocked) {
      if (at + UNLOCK_MEMORY_MS > now) break;
      this.unlocked.delete(member);
    }
  }

  private pruneLocks(now: number): void {
    for (const [member, { until }] of this.locks) if (until <= now) this.locks.delete(member);
    if (this.locks.size > MAX_LOCKOUTS) {
      const soonest = [...this.locks].sort((a, b) => a[1].until - b[1].until);
      for (const [member] of soonest.slice(0, this.locks.size - MAX_LOCKOUTS)) {
        this.locks.delete(member);
      }
    }
  }
}

/** Drops the `count` members with the lowest counts (as Redis's ZREMRANGEBYRANK 0 count-1). */
function dropLowest(set: Map<string, number>, count: number): void {
  const ranked = [...set].sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1));
  for (const [member] of ranked.slice(0, count)) set.delete(member);
}
