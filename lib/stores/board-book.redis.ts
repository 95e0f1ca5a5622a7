import {
  AUDIT_KEEP_MS,
  type AuditEntry,
  type BoardBook,
  type BoardLockout,
  type BoardOutcome,
  type BoardRefusal,
  type BoardWrite,
  BOARD_KEEP_MS,
  CARD_KEEP_MS,
  cardCurrent,
  cardOf,
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
import type { ScriptId } from './scripts';

/** Runs one of the store's scripts (in issue order with the store's other operations). */
export type BoardScriptRunner = (
  id: Extract<ScriptId, `board/${string}`>,
  keys: string[],
  args: Array<string | number>,
) => Promise<unknown>;

/**
 * The ops board's book in Redis (`RedisStore.board()`): every key under `<prefix>{board}:`, so
 * that on a Cluster they share one slot and each read or write is one script run
 * (lua/board/*.lua). Buckets are named by the store's clock as this process estimates it; the
 * scripts read Redis's.
 */
export class RedisBoardBook implements BoardBook {
  private readonly base: string;

  constructor(
    prefix: string,
    private readonly run: BoardScriptRunner,
    /** The store's clock as estimated here (ms since 1970). */
    private readonly clock: () => number,
    /** `''` (Redis TIME) or the store's custom clock, as the scripts' ARGV[1]. */
    private readonly scriptNow: () => string,
  ) {
    this.base = `${prefix}{board}`;
  }

  now(): number {
    return Math.floor(this.clock());
  }

  async record(write: BoardWrite): Promise<void> {
    const now = this.now();
    const keys = [
      `${this.base}:r:${now - (now % RATE_BUCKET_MS)}`,
      `${this.base}:locks`,
      `${this.base}:lock-since`,
      `${this.base}:policies`,
      `${this.base}:unlocked`,
    ];
    const args: Array<string | number> = [
      this.scriptNow(),
      0,
      1,
      BOARD_KEEP_MS,
      CARD_KEEP_MS,
      MAX_REFUSED_KEYS,
      MAX_LOCKOUTS,
      write.counts.length,
    ];
    for (const { policy, outcome, count } of write.counts) args.push(`${outcome}|${policy}`, count);
    args.push(write.cards.length);
    for (const card of write.cards) {
      args.push(card.name, JSON.stringify({ ...card, publishedAt: now }));
    }
    args.push(write.lockouts.length);
    for (const { policy, key, until, since, lastSeen } of write.lockouts) {
      args.push(lockoutMember(policy, key), until, since, lastSeen ?? since);
    }
    const minute = now - (now % REFUSAL_BUCKET_MS);
    const sets = new Map<string, BoardRefusal[]>();
    for (const refusal of write.refusals) {
      const key = this.refusalKey(refusal.kind, refusal.policy, minute);
      let group = sets.get(key);
      if (!group) sets.set(key, (group = []));
      group.push(refusal);
    }
    for (const [key, group] of sets) {
      keys.push(key);
      args.push(group.length);
      for (const refusal of group) args.push(refusalMember(refusal), refusal.count);
    }
    await this.run('board/write', keys, args);
  }

  async rates(sinceMs: number): Promise<RateCount[]> {
    const now = this.now();
    const first = Math.max(sinceMs, now - BOARD_KEEP_MS);
    const starts: number[] = [];
    let start = first - (first % RATE_BUCKET_MS);
    // A bucket is read until BOARD_KEEP_MS after it began, as the memory book keeps it.
    if (start + BOARD_KEEP_MS <= now) start += RATE_BUCKET_MS;
    for (let at = start; at <= now; at += RATE_BUCKET_MS) {
      starts.push(at);
    }
    const [, buckets] = await this.read(
      starts.map((at) => `${this.base}:r:${at}`),
      ['rates'],
    );
    const rows: RateCount[] = [];
    starts.forEach((at, i) => {
      const flat = asArray(asArray(buckets)[i]);
      for (let j = 0; j + 1 < flat.length; j += 2) {
        const field = String(flat[j]);
        const bar = field.indexOf('|');
        if (bar < 0) continue;
        rows.push({
          at,
          policy: field.slice(bar + 1),
          outcome: field.slice(0, bar) as BoardOutcome,
          count: Number(flat[j + 1]),
        });
      }
    });
    return rows;
  }

  async topRefusals(
    kind: RefusalKind,
    policies: readonly string[],
    minutes: number,
    top: number,
  ): Promise<BoardRefusal[]> {
    // (ZREVRANGE 0 -1 would be every key.)
    if (policies.length === 0 || !(top >= 1)) return [];
    const now = this.now();
    const span = refusalSpan(minutes);
    const last = now - (now % REFUSAL_BUCKET_MS);
    const keys = [`${this.base}:tmp`];
    for (const policy of policies) {
      for (let m = 0; m < span; m++) {
        keys.push(this.refusalKey(kind, policy, last - m * REFUSAL_BUCKET_MS));
      }
    }
    const [, groups] = await this.read(keys, ['top', top, ...policies.map(() => span)]);
    const rows: BoardRefusal[] = [];
    policies.forEach((policy, i) => {
      const flat = asArray(asArray(groups)[i]);
      for (let j = 0; j + 1 < flat.length; j += 2) {
        const row = refusalOf(policy, kind, String(flat[j]), Number(flat[j + 1]));
        if (row) rows.push(row);
      }
    });
    return rows;
  }

  async lockouts(max: number): Promise<BoardLockout[]> {
    const reply = await this.read(
      [`${this.base}:locks`, `${this.base}:lock-since`],
      ['locks', max],
    );
    const listed = asArray(reply[1]);
    const seen = asArray(reply[2]);
    const rows: BoardLockout[] = [];
    for (let j = 0; j + 1 < listed.length; j += 2) {
      const until = Number(listed[j + 1]);
      // '' when the first sighting is missing; 0 is one (a clock at 0).
      const seenAt = seen[j / 2] === '' ? Number.NaN : Number(seen[j / 2]);
      const since = Number.isFinite(seenAt) ? seenAt : until;
      const row = lockoutOf(String(listed[j]), until, since);
      if (row) rows.push(row);
    }
    return rows;
  }

  async cards(): Promise<PolicyCard[]> {
    const [now, flat] = await this.read([`${this.base}:policies`], ['cards']);
    const cards: PolicyCard[] = [];
    const fields = asArray(flat);
    for (let j = 0; j + 1 < fields.length; j += 2) {
      const card = cardOf(String(fields[j + 1]));
      if (card && cardCurrent(card, Number(now))) cards.push(card);
    }
    return cards;
  }

  async audit(count: number): Promise<AuditEntry[]> {
    const [, entries] = await this.read([`${this.base}:audit`], ['audit', count]);
    const rows: AuditEntry[] = [];
    for (const entry of asArray(entries)) {
      const fields = asArray(asArray(entry)[1]);
      const values = new Map<string, string>();
      for (let j = 0; j + 1 < fields.length; j += 2) {
        values.set(String(fields[j]), String(fields[j + 1]));
      }
      const at = Number(values.get('at'));
      const actor = values.get('actor');
      const action = values.get('action');
      const via = values.get('via');
      if (!Number.isFinite(at) || actor === undefined || action === undefined) continue;
      rows.push({
        at,
        actor,
        action,
        via: via ?? 'board',
        ...optional('policy', values.get('policy')),
        ...optional('key', values.get('key')),
        ...optional('detail', values.get('detail')),
      });
    }
    return rows;
  }

  async appendAudit(entry: Omit<AuditEntry, 'at'>): Promise<AuditEntry> {
    const fields: string[] = ['actor', entry.actor, 'action', entry.action, 'via', entry.via];
    if (entry.policy !== undefined) fields.push('policy', entry.policy);
    if (entry.key !== undefined) fields.push('key', entry.key);
    if (entry.detail !== undefined) fields.push('detail', entry.detail);
    const unlocks =
      entry.action === 'unlock' && entry.policy !== undefined && entry.key !== undefined
        ? lockoutMember(entry.policy, entry.key)
        : '';
    const at = await this.run(
      'board/audit',
      [
        `${this.base}:audit`,
        `${this.base}:locks`,
        `${this.base}:lock-since`,
        `${this.base}:unlocked`,
      ],
      [this.scriptNow(), 0, 1, AUDIT_KEEP_MS, MAX_AUDIT, unlocks, UNLOCK_MEMORY_MS, ...fields],
    );
    return { at: Number(at), ...entry };
  }

  private refusalKey(kind: RefusalKind, policy: string, minute: number): string {
    return `${this.base}:x:${kind}:${minute}:${policy}`;
  }

  private async read(keys: string[], args: Array<string | number>): Promise<unknown[]> {
    return asArray(await this.run('board/read', keys, [this.scriptNow(), 0, 1, ...args]));
  }
}

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? (value as unknown[]) : [];
}

function optional<K extends string>(name: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [name]: value }) as { [P in K]?: string };
}
