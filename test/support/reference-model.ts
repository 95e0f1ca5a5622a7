import type { Algorithm, BlockRule, LimitRule } from '../../lib';

/** What the model decides; the fields every store must reproduce exactly. */
export interface ModelDecision {
  allowed: boolean;
  remaining: number;
  retryAfterMs: number;
  resetAfterMs: number;
  /** With a lockout policy: the latest lockout end holding the call back or started by it. */
  blockedUntil?: number;
}

/** A caller key's lockout, as abuse-controls.md describes it. */
interface ModelLockout {
  until: number;
  duration: number;
  /** Strikes are remembered while `forgetAt > now`. */
  forgetAt: number;
}

/** One allowed spend, as the model remembers it. */
export interface ModelSpend {
  keys: string[];
  cost: number;
  at: number;
  refunded: boolean;
  /** Whether it was adjusted (at most once). */
  adjusted?: boolean;
  /** The keys it still weighs on (a reset or a refund takes keys off). */
  live: Set<string>;
  /** Per key, how many resets it had seen when the spend happened. */
  resetsSeen: Map<string, number>;
}

/** A bucket's level, written as the time its backlog drains to zero (rationals kept exact). */
interface Bucket {
  /** Backlog in units (1 token = windowMs units) as of `since`. */
  backlog: number;
  since: number;
  busyStart: number;
  /** Smallest backlog just before a later spend of the busy period; -1 none. */
  lowest: number;
  /** The latest spend. */
  lastAt: number;
  /** `lowest` and `lastAt` before the latest spend (restored when it is refunded). */
  prevLowest: number;
  prevLastAt: number;
}

/**
 * A deliberately naive limiter. Window algorithms keep every spend in a log and count from it;
 * buckets are replayed event by event; waits are found by stepping the clock one millisecond at
 * a time. Independent of the stores' closed forms, so agreement means something.
 */
export class ReferenceModel {
  private readonly log: ModelSpend[] = [];
  private buckets = new Map<string, Bucket>();
  private readonly resets = new Map<string, number>();
  private lockouts = new Map<string, ModelLockout>();

  /**
   * @param waits false: leave retryAfterMs and resetAfterMs at 0 (they are found by stepping the
   *   clock one ms at a time: too slow for windows of days)
   * @param block a lockout policy (abuse-controls.md): a key out of budget is locked out by the
   *   consume it refuses, for `durationMs`, or while its last lockout is remembered that one's
   *   length × factor within [durationMs, maxMs]; a locked key refuses until the lockout ends;
   *   `restart` forgets the key's count when the lockout starts, as a reset does
   */
  constructor(
    private readonly algorithm: Algorithm,
    private readonly limits: readonly LimitRule[],
    private readonly waits = true,
    private readonly block?: BlockRule,
  ) {}

  /** What consume would decide now (its `remaining` and `resetAfterMs` as if spent); changes nothing. */
  peek(keys: string[], cost: number, now: number): ModelDecision {
    const logLength = this.log.length;
    const live = this.log.map((spend) => new Set(spend.live));
    const buckets = new Map([...this.buckets].map(([id, bucket]) => [id, { ...bucket }]));
    const resets = new Map(this.resets);
    const lockouts = new Map(this.lockouts);
    const { decision } = this.consume(keys, cost, now);
    this.log.length = logLength;
    this.log.forEach((spend, i) => (spend.live = live[i]!));
    this.buckets = buckets;
    this.resets.clear();
    for (const [key, n] of resets) this.resets.set(key, n);
    this.lockouts = lockouts;
    return decision;
  }

  consume(
    keys: string[],
    cost: number,
    now: number,
  ): { decision: ModelDecision; spend?: ModelSpend } {
    const keySet = [...new Set(keys)];
    if (this.block) return this.consumeBlocked(keySet, cost, now, this.block);
    return this.consumeUnblocked(keySet, cost, now);
  }

  private consumeUnblocked(
    keySet: string[],
    cost: number,
    now: number,
  ): { decision: ModelDecision; spend?: ModelSpend } {
    const allowed = this.fits(keySet, cost, now);
    let spend: ModelSpend | undefined;
    if (allowed) {
      spend = {
        keys: keySet,
        cost,
        at: now,
        refunded: false,
        live: new Set(keySet),
        resetsSeen: new Map(keySet.map((key) => [key, this.resets.get(key) ?? 0])),
      };
      this.log.push(spend);
      if (this.isBucket()) for (const key of keySet) this.spendBucket(key, cost, now);
    }
    let remaining = Infinity;
    for (const key of keySet) {
      for (const [l, rule] of this.limits.entries())
        remaining = Math.min(remaining, this.room(key, l, rule, now));
    }
    const retryAfterMs = allowed ? 0 : this.firstInstant((t) => this.fits(keySet, cost, t), now);
    const resetAfterMs = this.firstInstant(
      (t) =>
        keySet.every((key) => this.limits.every((rule, l) => this.used(key, l, rule, t) === 0)),
      now,
      0,
    );
    return {
      decision: { allowed, remaining: Math.max(0, remaining), retryAfterMs, resetAfterMs },
      spend,
    };
  }

  /**
   * consume() under a lockout policy. Each key: locked out now → refuses until its end; else out of
   * budget → refuses, and the refusal locks it out (a refused consume writes it; a peek only
   * reports it). retryAfterMs is the first instant at which no key is locked out and every key's
   * budget fits (after a restart, from the forgotten count); remaining is 0 while a key is locked
   * out; resetAfterMs also waits for every lockout involved to end.
   */
  private consumeBlocked(
    keySet: string[],
    cost: number,
    now: number,
    block: BlockRule,
  ): { decision: ModelDecision; spend?: ModelSpend } {
    let held = false;
    const starts: Array<{ key: string; duration: number }> = [];
    const ends: number[] = [];
    for (const key of keySet) {
      const stored = this.lockouts.get(key);
      const remembered = stored && stored.forgetAt > now ? stored : undefined;
      if (remembered && remembered.until > now) {
        held = true;
        ends.push(remembered.until);
      } else if (!this.fits([key], cost, now)) {
        const duration = remembered
          ? Math.max(
              block.durationMs,
              Math.min(Math.floor(remembered.duration * block.factor), block.maxMs),
            )
          : block.durationMs;
        starts.push({ key, duration });
        ends.push(now + duration);
      }
    }
    if (!held && starts.length === 0) return this.consumeUnblocked(keySet, cost, now);
    let remaining = Infinity;
    for (const key of keySet) {
      for (const [l, rule] of this.limits.entries())
        remaining = Math.min(remaining, this.room(key, l, rule, now));
    }
    if (held) remaining = 0;
    for (const { key, duration } of starts) {
      this.lockouts.set(key, {
        until: now + duration,
        duration,
        forgetAt: now + duration + block.forgetAfterMs,
      });
      if (block.restart) this.forget(key);
    }
    const unlocked = (t: number) =>
      keySet.every((key) => (this.lockouts.get(key)?.until ?? 0) <= t);
    const retryAfterMs = this.firstInstant((t) => unlocked(t) && this.fits(keySet, cost, t), now);
    const resetAfterMs = this.firstInstant(
      (t) =>
        unlocked(t) &&
        keySet.every((key) => this.limits.every((rule, l) => this.used(key, l, rule, t) === 0)),
      now,
      0,
    );
    return {
      decision: {
        allowed: false,
        remaining: Math.max(0, remaining),
        retryAfterMs,
        resetAfterMs,
        blockedUntil: Math.max(...ends),
      },
    };
  }

  /** An admin reset: the keys' state and lockouts are gone; spends before it refund nothing on those keys. */
  reset(keys: string[]): void {
    for (const key of new Set(keys)) {
      this.forget(key);
      this.lockouts.delete(key);
    }
  }

  /** The key's count is forgotten (a reset, a restart lockout): spends before it refund nothing there. */
  private forget(key: string): void {
    this.resets.set(key, (this.resets.get(key) ?? 0) + 1);
    for (const spend of this.log) spend.live.delete(key);
    this.limits.forEach((_, l) => this.buckets.delete(`${key}/${l}`));
  }

  refund(spend: ModelSpend, now: number): void {
    if (spend.refunded) return;
    spend.refunded = true;
    // Only on keys not reset since the spend.
    const keys = spend.keys.filter(
      (key) => spend.resetsSeen.get(key) === (this.resets.get(key) ?? 0),
    );
    if (!this.isBucket()) {
      for (const key of keys) spend.live.delete(key); // the log simply stops counting it
      return;
    }
    // Older than the longest a bucket can stay busy: it weighs on nothing, or the store can no
    // longer tell how much (the safe side: nothing back).
    const lifetime = Math.max(
      ...this.limits.map((r) => Math.ceil((r.burst * r.windowMs) / r.limit)),
    );
    if (now - spend.at > lifetime) return;
    for (const key of keys) {
      this.limits.forEach((rule, l) => {
        const bucket = this.bucketAt(key, l, rule, now);
        if (!bucket || spend.at < bucket.busyStart) return; // full since the spend: nothing back
        const latest = spend.at === bucket.lastAt;
        let back = Math.min(spend.cost * rule.windowMs, bucket.backlog);
        if (!latest && bucket.lowest >= 0) back = Math.min(back, bucket.lowest);
        if (back <= 0) return;
        bucket.backlog -= back;
        if (latest) {
          bucket.lowest = bucket.prevLowest;
          bucket.lastAt = bucket.prevLastAt;
        } else {
          if (bucket.lowest >= 0) bucket.lowest = Math.max(0, bucket.lowest - back);
          if (bucket.prevLowest >= 0) bucket.prevLowest = Math.max(0, bucket.prevLowest - back);
        }
        this.buckets.set(`${key}/${l}`, bucket);
      });
    }
  }

  /**
   * The spend now costs `actualCost`. Window algorithms count every spend at its final cost at its
   * instant (a spend whose window is over weighs on nothing either way). Buckets follow the store's
   * documented rule: less gives back as a refund would (a latest spend stays the latest); more adds
   * to the backlog while the bucket has been busy since the spend, else nothing.
   */
  adjust(spend: ModelSpend, actualCost: number, now: number): void {
    if (spend.refunded || spend.adjusted) return;
    spend.adjusted = true;
    const before = spend.cost;
    if (!this.isBucket()) {
      spend.cost = actualCost;
      return;
    }
    const lifetime = Math.max(
      ...this.limits.map((r) => Math.ceil((r.burst * r.windowMs) / r.limit)),
    );
    spend.cost = actualCost;
    if (now - spend.at > lifetime || actualCost === before) return;
    const keys = spend.keys.filter(
      (key) => spend.resetsSeen.get(key) === (this.resets.get(key) ?? 0),
    );
    for (const key of keys) {
      this.limits.forEach((rule, l) => {
        const bucket = this.bucketAt(key, l, rule, now);
        if (actualCost > before) {
          // Busy since the spend: the extra adds to the backlog; full since: nothing.
          if (bucket && spend.at >= bucket.busyStart) {
            const units = (actualCost - before) * rule.windowMs;
            this.buckets.set(`${key}/${l}`, { ...bucket, backlog: bucket.backlog + units });
          }
          return;
        }
        if (!bucket || spend.at < bucket.busyStart) return;
        const latest = spend.at === bucket.lastAt;
        let back = Math.min((before - actualCost) * rule.windowMs, bucket.backlog);
        if (!latest && bucket.lowest >= 0) back = Math.min(back, bucket.lowest);
        if (back <= 0) return;
        bucket.backlog -= back;
        if (!latest) {
          if (bucket.lowest >= 0) bucket.lowest = Math.max(0, bucket.lowest - back);
          if (bucket.prevLowest >= 0) bucket.prevLowest = Math.max(0, bucket.prevLowest - back);
        }
        this.buckets.set(`${key}/${l}`, bucket);
      });
    }
  }

  private isBucket(): boolean {
    return this.algorithm === 'token-bucket' || this.algorithm === 'gcra';
  }

  /** Units used (× windowMs for window algorithms, backlog units for buckets) at instant t. */
  private used(key: string, l: number, rule: LimitRule, t: number): number {
    const { windowMs } = rule;
    if (this.isBucket()) return this.bucketAt(key, l, rule, t)?.backlog ?? 0;
    if (this.algorithm === 'sliding-log') {
      return this.sum(key, (at) => at > t - windowMs && at <= t) * windowMs;
    }
    const w = Math.floor(t / windowMs);
    const cur = this.sum(key, (at) => Math.floor(at / windowMs) === w) * windowMs;
    if (this.algorithm === 'fixed-window') return cur;
    const prev = this.sum(key, (at) => Math.floor(at / windowMs) === w - 1);
    return prev * (windowMs - (t - w * windowMs)) + cur;
  }

  private capacity(rule: LimitRule): number {
    return (this.isBucket() ? rule.burst : rule.limit) * rule.windowMs;
  }

  private room(key: string, l: number, rule: LimitRule, t: number): number {
    return Math.floor((this.capacity(rule) - this.used(key, l, rule, t)) / rule.windowMs);
  }

  private fits(keys: string[], cost: number, t: number): boolean {
    return keys.every((key) =>
      this.limits.every(
        (rule, l) => this.used(key, l, rule, t) + cost * rule.windowMs <= this.capacity(rule),
      ),
    );
  }

  private sum(key: string, counted: (at: number) => boolean): number {
    let units = 0;
    for (const s of this.log) if (s.live.has(key) && counted(s.at)) units += s.cost;
    return units;
  }

  /** The bucket drained to instant t (a copy for t in the future), or undefined when full. */
  private bucketAt(key: string, l: number, rule: LimitRule, t: number): Bucket | undefined {
    const bucket = this.buckets.get(`${key}/${l}`);
    if (!bucket) return undefined;
    const backlog = bucket.backlog - (t - bucket.since) * rule.limit;
    if (backlog <= 0) return undefined;
    if (t === bucket.since) return bucket;
    return { ...bucket, backlog, since: t };
  }

  private spendBucket(key: string, cost: number, now: number): void {
    this.limits.forEach((rule, l) => {
      const id = `${key}/${l}`;
      const current = this.bucketAt(key, l, rule, now);
      const units = cost * rule.windowMs;
      if (!current) {
        this.buckets.set(id, {
          backlog: units,
          since: now,
          busyStart: now,
          lowest: -1,
          lastAt: now,
          prevLowest: -1,
          prevLastAt: -1,
        });
        return;
      }
      const lowest =
        current.lowest < 0 ? current.backlog : Math.min(current.lowest, current.backlog);
      this.buckets.set(id, {
        ...current,
        backlog: current.backlog + units,
        since: now,
        lowest,
        lastAt: now,
        prevLowest: current.lowest,
        prevLastAt: current.lastAt,
      });
    });
  }

  private firstInstant(ok: (t: number) => boolean, now: number, from = 1): number {
    if (!this.waits) return 0;
    const horizon =
      3 * Math.max(...this.limits.map((r) => Math.ceil((r.burst / r.limit) * r.windowMs))) +
      (this.block?.maxMs ?? 0);
    for (let d = from; d <= horizon; d++) if (ok(now + d)) return d;
    throw new Error('reference model: no instant found within the horizon');
  }
}
