import type { Algorithm, LimitRule } from '../../lib';

/** What the model decides; the fields every store must reproduce exactly. */
export interface ModelDecision {
  allowed: boolean;
  remaining: number;
  retryAfterMs: number;
  resetAfterMs: number;
}

interface Spend {
  keys: string[];
  cost: number;
  at: number;
  refunded: boolean;
}

/**
 * A deliberately naive limiter: it keeps every spend in a log, derives counts from the log, and
 * finds waits by stepping the clock one millisecond at a time. Independent of the stores' closed
 * forms, so agreement means something.
 */
export class ReferenceModel {
  private readonly log: Spend[] = [];

  constructor(
    private readonly algorithm: Algorithm,
    private readonly limits: readonly LimitRule[],
  ) {}

  consume(keys: string[], cost: number, now: number): { decision: ModelDecision; spend?: Spend } {
    const keySet = [...new Set(keys)];
    const allowed = this.fits(keySet, cost, now);
    let spend: Spend | undefined;
    if (allowed) {
      spend = { keys: keySet, cost, at: now, refunded: false };
      this.log.push(spend);
    }
    let remaining = Infinity;
    for (const key of keySet) {
      for (const rule of this.limits) {
        remaining = Math.min(remaining, this.room(key, rule, now)); // the log already holds the spend
      }
    }
    const retryAfterMs = allowed ? 0 : this.firstInstant((t) => this.fits(keySet, cost, t), now);
    const resetAfterMs = this.firstInstant(
      (t) => keySet.every((key) => this.limits.every((rule) => this.weighted(key, rule, t) === 0)),
      now,
      0,
    );
    return {
      decision: { allowed, remaining: Math.max(0, remaining), retryAfterMs, resetAfterMs },
      spend,
    };
  }

  refund(spend: Spend): void {
    spend.refunded = true;
  }

  /** Units charged on `key` in window `index` of `rule`. */
  private count(key: string, rule: LimitRule, index: number): number {
    let sum = 0;
    for (const s of this.log) {
      if (!s.refunded && s.keys.includes(key) && Math.floor(s.at / rule.windowMs) === index)
        sum += s.cost;
    }
    return sum;
  }

  /** Usage × window (an integer), so the comparison is exact. */
  private weighted(key: string, rule: LimitRule, t: number): number {
    const w = Math.floor(t / rule.windowMs);
    const cur = this.count(key, rule, w) * rule.windowMs;
    if (this.algorithm === 'fixed-window') return cur;
    const elapsed = t - w * rule.windowMs;
    return this.count(key, rule, w - 1) * (rule.windowMs - elapsed) + cur;
  }

  private room(key: string, rule: LimitRule, t: number): number {
    return Math.floor((rule.limit * rule.windowMs - this.weighted(key, rule, t)) / rule.windowMs);
  }

  private fits(keys: string[], cost: number, t: number): boolean {
    return keys.every((key) =>
      this.limits.every(
        (rule) => this.weighted(key, rule, t) + cost * rule.windowMs <= rule.limit * rule.windowMs,
      ),
    );
  }

  private firstInstant(ok: (t: number) => boolean, now: number, from = 1): number {
    const horizon = 3 * Math.max(...this.limits.map((r) => r.windowMs));
    for (let d = from; d <= horizon; d++) if (ok(now + d)) return d;
    throw new Error('reference model: no instant found within three windows');
  }
}
