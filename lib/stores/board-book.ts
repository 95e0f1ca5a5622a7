// What the ops board reads, kept by the store: fleet-wide counts per policy and outcome, the keys
// refused most, current lockouts, the policies the fleet runs, and the audit of actions taken.
// Written by the apps' board recorders (lib/board/board-recorder.ts), a few times a second at most
// per process, never on a decision's path. The Redis book and the memory book keep the same data
// with the same bounds.

/** What the board counts per policy: how decisions came out (see `DecisionOutcome`). */
export type BoardOutcome = 'allowed' | 'refused' | 'blocked' | 'failed' | 'shadow-refused';

/** The outcomes the board counts, in the order it shows them. */
export const BOARD_OUTCOMES: readonly BoardOutcome[] = [
  'allowed',
  'refused',
  'blocked',
  'failed',
  'shadow-refused',
];

/** Refusals the store made (`refused`, lockouts included), or those a shadow policy would have made. */
export type RefusalKind = 'refused' | 'shadow';

/** Refusals of one key under one policy's limit, counted over some minutes. */
export interface BoardRefusal {
  /** The policy's name. */
  readonly policy: string;
  /** Refused for real, or only in shadow mode. */
  readonly kind: RefusalKind;
  /** The caller key as the limiter got it (hashed identities stay hashed). */
  readonly key: string;
  /** The refusing limit (0 for a lockout that refused). */
  readonly limit: number;
  /** Its window, in ms (0 for a lockout). */
  readonly windowMs: number;
  /** How many refusals. */
  readonly count: number;
}

/** A lockout the fleet saw start or refuse (policy option `block`). */
export interface BoardLockout {
  /** The policy's name. */
  readonly policy: string;
  /** The locked-out caller key. */
  readonly key: string;
  /** When it ends, on the store's clock (ms since 1970). */
  readonly until: number;
  /** When the board first saw it (the store's clock): about when it started. */
  readonly since: number;
  /**
   * When a recorder last saw it refuse (the store's clock; default `since`). A lockout unlocked
   * at or after this instant is not listed again by a flush that comes later.
   */
  readonly lastSeen?: number;
}

/** A policy as the board shows it (the fleet's apps publish theirs). */
export interface PolicyCard {
  /** The policy's name. */
  readonly name: string;
  /** Its algorithm. */
  readonly algorithm: string;
  /** Its limits. */
  readonly limits: ReadonlyArray<{
    /** Units per window. */
    readonly limit: number;
    /** The window, in ms. */
    readonly windowMs: number;
  }>;
  /** Bucket size where the algorithm has one. */
  readonly burst?: number;
  /** Its lockout, in ms. */
  readonly block?: {
    /** The first lockout's length. */
    readonly durationMs: number;
    /** Escalation factor. */
    readonly factor: number;
    /** The longest lockout. */
    readonly maxMs: number;
    /** Strike memory after a lockout ends. */
    readonly forgetAfterMs: number;
    /** Whether a lockout forgets the key's count. */
    readonly restart: boolean;
  };
  /** Whether it is in shadow mode. */
  readonly shadow: boolean;
  /** Its fail mode. */
  readonly failMode: string;
  /** When an app last published it (store clock); set by the book. */
  readonly publishedAt?: number;
}

/** One flush of a board recorder: what it saw since the last one. */
export interface BoardWrite {
  /** Counts per policy and outcome. */
  readonly counts: ReadonlyArray<{
    /** The policy's name. */
    readonly policy: string;
    /** The outcome counted. */
    readonly outcome: BoardOutcome;
    /** How many decisions. */
    readonly count: number;
  }>;
  /** Refusals per key (summed into the current minute). */
  readonly refusals: readonly BoardRefusal[];
  /** Lockouts seen (`since` is when this recorder saw the lockout refuse first). */
  readonly lockouts: readonly BoardLockout[];
  /** The recorder's policies (published every few flushes). */
  readonly cards: readonly PolicyCard[];
}

/** Counts of one policy and outcome in one 10 s bucket. */
export interface RateCount {
  /** The bucket's start (store clock, ms since 1970). */
  readonly at: number;
  /** The policy's name. */
  readonly policy: string;
  /** The outcome. */
  readonly outcome: BoardOutcome;
  /** Decisions in the bucket, fleet-wide. */
  readonly count: number;
}

/** One action taken from the board or the CLI. */
export interface AuditEntry {
  /** When (store clock, ms since 1970). */
  readonly at: number;
  /** Who: what the app's `actor` hook named, or `cli`. */
  readonly actor: string;
  /** What: `unlock`, … */
  readonly action: string;
  /** Where it was taken: `board` or `cli`. */
  readonly via: string;
  /** The policy it touched. */
  readonly policy?: string;
  /** The caller key it touched (as stored). */
  readonly key?: string;
  /** Anything else worth keeping. */
  readonly detail?: string;
}

/** The longest wait for one of the board's store calls (a page, a flush), in ms. */
export const BOARD_CALL_MS = 3_000;
/** How long counts and refusals are kept. */
export const BOARD_KEEP_MS = 30 * 60_000;
/** The length of a rate bucket. */
export const RATE_BUCKET_MS = 10_000;
/** The length of a refusal bucket. */
export const REFUSAL_BUCKET_MS = 60_000;
/** Keys kept per policy, kind and minute (those refused least are dropped first). */
export const MAX_REFUSED_KEYS = 1_000;
/** Lockouts kept (those ending soonest are dropped first). */
export const MAX_LOCKOUTS = 10_000;
/** Audit entries kept (the oldest are dropped). */
export const MAX_AUDIT = 10_000;
/** How long the board remembers an unlock, so a late flush does not list that lockout again. */
export const UNLOCK_MEMORY_MS = 10 * 60_000;
/** How long the audit is kept after its last entry. */
export const AUDIT_KEEP_MS = 90 * 24 * 3_600_000;
/** How long a policy card is kept after its app last published it. */
export const CARD_KEEP_MS = 24 * 3_600_000;

/**
 * Where the ops board's figures live: `RedisStore.board()` (shared by the fleet, in one Cluster
 * slot) or `MemoryStore.board()` (one process). Bounded: counts and refusals are kept 30 minutes,
 * at most 1,000 keys per policy and minute, 10,000 lockouts and 10,000 audit entries.
 */
export interface BoardBook {
  /** The store's clock as this process estimates it (ms since 1970). */
  now(): number;
  /** Adds one recorder's flush. */
  record(write: BoardWrite): Promise<void>;
  /** Counts since `sinceMs` (store clock), per 10 s bucket. */
  rates(sinceMs: number): Promise<RateCount[]>;
  /**
   * The `top` keys refused most per policy over the last `minutes` (1 to 30), most first.
   */
  topRefusals(
    kind: RefusalKind,
    policies: readonly string[],
    minutes: number,
    top: number,
  ): Promise<BoardRefusal[]>;
  /** Lockouts still running, soonest end first, at most `max`. */
  lockouts(max: number): Promise<BoardLockout[]>;
  /** The policies the fleet's apps published. */
  cards(): Promise<PolicyCard[]>;
  /** The latest `count` audit entries, newest first. */
  audit(count: number): Promise<AuditEntry[]>;
  /**
   * Adds an audit entry (its `at` is the store's clock); an `unlock` also takes the key's lockout
   * of that policy off the list.
   */
  appendAudit(entry: Omit<AuditEntry, 'at'>): Promise<AuditEntry>;
}

/** How many minutes of refusals a read of `minutes` covers: 1 to 30 (whole minutes, at least one). */
export function refusalSpan(minutes: number): number {
  const whole = Number.isFinite(minutes) ? Math.floor(minutes) : 1;
  return Math.max(1, Math.min(whole, BOARD_KEEP_MS / REFUSAL_BUCKET_MS));
}

/** The member a lockout is listed under. */
export function lockoutMember(policy: string, key: string): string {
  return JSON.stringify([policy, key]);
}

/** The member a refusal is counted under. */
export function refusalMember(refusal: Omit<BoardRefusal, 'count' | 'policy' | 'kind'>): string {
  return JSON.stringify([refusal.key, refusal.limit, refusal.windowMs]);
}

/** A refusal from its member and count, or undefined when the member is not one of ours. */
export function refusalOf(
  policy: string,
  kind: RefusalKind,
  member: string,
  count: number,
): BoardRefusal | undefined {
  const parsed = parseJson(member);
  if (!Array.isArray(parsed) || parsed.length !== 3) return undefined;
  const [key, limit, windowMs] = parsed as unknown[];
  if (typeof key !== 'string' || typeof limit !== 'number' || typeof windowMs !== 'number') {
    return undefined;
  }
  return { policy, kind, key, limit, windowMs, count };
}

/** A lockout from its member, or undefined when the member is not one of ours. */
export function lockoutOf(member: string, until: number, since: number): BoardLockout | undefined {
  const parsed = parseJson(member);
  if (!Array.isArray(parsed) || parsed.length !== 2) return undefined;
  const [policy, key] = parsed as unknown[];
  if (typeof policy !== 'string' || typeof key !== 'string') return undefined;
  return { policy, key, until, since };
}

/** A policy card from its stored text, or undefined when it is not one (every field checked). */
export function cardOf(text: string): PolicyCard | undefined {
  const card = parseJson(text) as Record<string, unknown> | undefined;
  if (typeof card !== 'object' || card === null || Array.isArray(card)) return undefined;
  const { name, algorithm, limits, burst, block, shadow, failMode, publishedAt } = card;
  const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
  if (typeof name !== 'string' || typeof algorithm !== 'string') return undefined;
  if (typeof shadow !== 'boolean' || typeof failMode !== 'string') return undefined;
  if (!Array.isArray(limits)) return undefined;
  const rules: Array<{ limit: number; windowMs: number }> = [];
  for (const rule of limits as unknown[]) {
    const { limit, windowMs } = (rule ?? {}) as Record<string, unknown>;
    if (!isNumber(limit) || !isNumber(windowMs)) return undefined;
    rules.push({ limit, windowMs });
  }
  if (burst !== undefined && !isNumber(burst)) return undefined;
  if (publishedAt !== undefined && !isNumber(publishedAt)) return undefined;
  let lockout: PolicyCard['block'];
  if (block !== undefined) {
    const b = (block ?? {}) as Record<string, unknown>;
    const { durationMs, factor, maxMs, forgetAfterMs, restart } = b;
    if (![durationMs, factor, maxMs, forgetAfterMs].every(isNumber)) return undefined;
    if (typeof restart !== 'boolean') return undefined;
    lockout = {
      durationMs: durationMs as number,
      factor: factor as number,
      maxMs: maxMs as number,
      forgetAfterMs: forgetAfterMs as number,
      restart,
    };
  }
  return {
    name,
    algorithm,
    limits: rules,
    ...(burst !== undefined && { burst }),
    ...(lockout && { block: lockout }),
    shadow,
    failMode,
    ...(publishedAt !== undefined && { publishedAt }),
  };
}

/** Whether a card is still shown at `now`: published within {@link CARD_KEEP_MS}. */
export function cardCurrent(card: PolicyCard, now: number): boolean {
  return card.publishedAt === undefined || card.publishedAt + CARD_KEEP_MS > now;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
