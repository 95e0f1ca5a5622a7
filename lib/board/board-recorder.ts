import { createHash } from 'node:crypto';
import type { Decision } from '../core/decision';
import type { DecisionEvents } from '../core/events';
import type { Limiter } from '../core/limiter';
import { asError } from '../core/values.util';
import { processWarning, warnEvery } from '../core/warn-every.util';
import {
  BOARD_OUTCOMES,
  type BoardBook,
  type BoardLockout,
  type BoardOutcome,
  type BoardRefusal,
  type BoardWrite,
  type PolicyCard,
  refusalMember,
} from '../stores/board-book';

/**
 * Distinct refused keys kept per policy and kind between two flushes. A full list is flushed at
 * once; while two writes are under way already, it keeps its heavy hitters (Misra-Gries): a key
 * refused more than 1/1,000 of the list's refusals stays listed.
 */
export const MAX_PENDING_REFUSALS = 1_000;
/**
 * Distinct lockouts kept per policy between two flushes. A full list is flushed at once; while two
 * writes are under way already, the lockouts seen first stay.
 */
export const MAX_PENDING_LOCKOUTS = 1_000;
/** The longest key the board keeps as it is; a longer one is shortened (see {@link boardKey}). */
export const MAX_BOARD_KEY = 512;
/** Writes a recorder keeps under way or waiting at once before a full list keeps heavy hitters. */
const MAX_WRITES = 2;
/** How often a recorder publishes its policies (every this many flushes). */
const CARDS_EVERY = 15;

/** How a {@link BoardRecorder} runs. */
export interface BoardRecorderOptions {
  /** How often it writes what it counted to the book, in ms (default 2,000). */
  readonly flushMs?: number;
  /** The app's limiters, published as the board's policies. */
  readonly limiters: () => readonly Limiter[];
}

/**
 * Counts what the ops board shows, in this process, and writes it to the store's board book every
 * `flushMs`: decisions per policy and outcome, refused keys (the refusing key, summed per key and
 * limit), lockouts seen, and the app's policies. It watches the limiters' decision events (a
 * function call and a counter per allowed decision: nothing is written on a decision's path) and
 * writes one script run per flush, whatever the traffic.
 *
 * What the figures miss: a flush that fails is dropped (a warning at most once a minute); a
 * process that dies loses its last `flushMs`; between flushes at most
 * {@link MAX_PENDING_REFUSALS} distinct refused keys are kept (refusals of further keys are
 * counted in the rates, not listed).
 *
 * @example
 * const recorder = new BoardRecorder(events, store.board(), { limiters: () => [login] });
 * recorder.start();
 */
export class BoardRecorder {
  private counts = new Map<string, Record<BoardOutcome, number>>();
  /** `kind\npolicy` → member → refusal. */
  private refusals = new Map<string, Map<string, BoardRefusal & { count: number }>>();
  /** Policy → key → lockout. */
  private locks = new Map<string, Map<string, BoardLockout>>();
  private timer?: NodeJS.Timeout;
  private unwatch?: () => void;
  private flushing?: Promise<void>;
  private flushes = 0;
  /** Writes under way or waiting for the one before them. */
  private writes = 0;
  private readonly flushMs: number;
  private readonly warnFailure = warnEvery(processWarning, 60_000);

  constructor(
    private readonly events: DecisionEvents,
    private readonly book: BoardBook,
    private readonly options: BoardRecorderOptions,
  ) {
    const flushMs = options.flushMs ?? 2_000;
    if (!Number.isSafeInteger(flushMs) || flushMs < 100 || flushMs > 60_000) {
      throw new RangeError(
        `board recorder flushMs must be a whole number of ms from 100 to 60000; got ${String(flushMs)}`,
      );
    }
    this.flushMs = flushMs;
  }

  /** Starts watching decisions and flushing. */
  start(): void {
    if (this.unwatch) return;
    this.unwatch = this.events.watch((decision) => this.see(decision));
    this.timer = setInterval(() => void this.flush(), this.flushMs);
    this.timer.unref();
  }

  /** Stops watching and writes what is left (resolves when written, or when writing failed). */
  async stop(): Promise<void> {
    this.unwatch?.();
    this.unwatch = undefined;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  /** Counts one decision (the events' watcher). */
  see(decision: Decision): void {
    const outcome = outcomeOf(decision);
    if (outcome === undefined) return;
    let counts = this.counts.get(decision.policy);
    if (!counts) this.counts.set(decision.policy, (counts = zeroCounts()));
    counts[outcome]++;
    if (outcome === 'allowed' || outcome === 'failed') return;
    const by = decision.blockedBy;
    if (by === undefined) return;
    this.refused({
      policy: decision.policy,
      kind: outcome === 'shadow-refused' ? 'shadow' : 'refused',
      key: boardKey(by.key),
      limit: decision.blockedUntil === undefined ? by.limit : 0,
      windowMs: decision.blockedUntil === undefined ? by.windowMs : 0,
      count: 1,
    });
    if (decision.blockedUntil !== undefined && outcome === 'blocked') {
      this.lockedOut(decision.policy, boardKey(by.key), decision.blockedUntil, decision.receipt.at);
    }
  }

  /**
   * Writes what was counted since the last flush (one script run on Redis), after the writes
   * already under way; resolves when it is written (or dropped with a warning).
   */
  flush(): Promise<void> {
    const counts = [...this.counts].flatMap(([policy, byOutcome]) =>
      BOARD_OUTCOMES.filter((outcome) => byOutcome[outcome] > 0).map((outcome) => ({
        policy,
        outcome,
        count: byOutcome[outcome],
      })),
    );
    const refusals = [...this.refusals.values()].flatMap((group) => [...group.values()]);
    const lockouts = [...this.locks.values()].flatMap((group) => [...group.values()]);
    const cards = this.flushes++ % CARDS_EVERY === 0 ? this.cards() : [];
    this.counts = new Map();
    this.refusals = new Map();
    this.locks = new Map();
    if (counts.length + refusals.length + lockouts.length + cards.length === 0) {
      return this.flushing ?? Promise.resolve();
    }
    // One write at a time, in order: this one after those under way.
    const write = { counts, refusals, lockouts, cards };
    const previous = this.flushing;
    this.writes++;
    const flushing = (previous ? previous.then(() => this.record(write)) : this.record(write))
      .catch((error: unknown) => {
        const reason = error instanceof Error ? error.message : String(error);
        this.warnFailure(() => `redlimit: the ops board's figures could not be written: ${reason}`);
      })
      .finally(() => {
        this.writes--;
        if (this.flushing === flushing) this.flushing = undefined;
      });
    this.flushing = flushing;
    return flushing;
  }

  /** The book's write, as a promise even when the book throws at once (a clock that broke). */
  private record(write: BoardWrite): Promise<void> {
    try {
      return this.book.record(write);
    } catch (error) {
      return Promise.reject(asError(error));
    }
  }

  private refused(refusal: BoardRefusal): void {
    const name = `${refusal.kind}\n${refusal.policy}`;
    let group = this.refusals.get(name);
    if (!group) {
      this.refusals.set(name, (group = new Map<string, BoardRefusal & { count: number }>()));
    }
    const member = refusalMember(refusal);
    const held = group.get(member);
    if (held) {
      held.count++;
      return;
    }
    if (group.size >= MAX_PENDING_REFUSALS) {
      if (this.flushEarly()) {
        this.refused(refusal); // into the fresh lists
        return;
      }
      // Misra-Gries: every count down by one, the zeros go, the newcomer is not listed. A key
      // refused more than 1/1,000 of this list's refusals since the last flush stays listed
      // (its count then a lower bound), however the one-off keys around it are ordered.
      for (const [other, entry] of group) if (--entry.count === 0) group.delete(other);
      return;
    }
    group.set(member, { ...refusal });
  }

  private lockedOut(policy: string, key: string, until: number, at: number): void {
    let group = this.locks.get(policy);
    if (!group) this.locks.set(policy, (group = new Map<string, BoardLockout>()));
    const held = group.get(key);
    if (held) {
      group.set(key, {
        ...held,
        until: Math.max(held.until, until),
        lastSeen: Math.max(held.lastSeen ?? held.since, at),
      });
      return;
    }
    if (group.size >= MAX_PENDING_LOCKOUTS) {
      // The lockouts seen first stay (a flood of later ones cannot push one out); a newcomer
      // waits for the next flush (it is seen again when it refuses again).
      if (this.flushEarly()) this.lockedOut(policy, key, until, at);
      return;
    }
    group.set(key, { policy, key, until, since: at, lastSeen: at });
  }

  /**
   * A flush now, when a list is full, unless {@link MAX_WRITES} writes are under way already (a
   * flood of distinct refused keys costs the store at most one more write per 1,000 of them, and
   * only as fast as the store answers). True when the lists were handed to it (they are empty).
   */
  private flushEarly(): boolean {
    if (this.writes >= MAX_WRITES) return false;
    void this.flush();
    return true;
  }

  private cards(): PolicyCard[] {
    return this.options.limiters().map(policyCard);
  }
}

function zeroCounts(): Record<BoardOutcome, number> {
  return { allowed: 0, refused: 0, blocked: 0, failed: 0, 'shadow-refused': 0 };
}

/**
 * A caller key as the board keeps it: as it is up to {@link MAX_BOARD_KEY} characters, else its
 * first 200 characters, `…#` and 43 characters of its SHA-256 (a key built from what a client
 * sent can be long; the board's memory stays bounded). A shortened key is shown, not acted on.
 */
export function boardKey(key: string): string {
  // A key that looks shortened is shortened too: no key a client chose can pose as one, or
  // merge with a long key's entries.
  if (key.length <= MAX_BOARD_KEY && !isShortenedKey(key)) return key;
  return `${key.slice(0, 200)}${SHORTENED}${createHash('sha256').update(key).digest('base64url')}`;
}

/** What separates a shortened key's start from its digest. */
const SHORTENED = '\u2026#';

/** Whether the board shortened this key (see {@link boardKey}). */
export function isShortenedKey(key: string): boolean {
  return key.length === 200 + SHORTENED.length + 43 && key.slice(200, 202) === SHORTENED;
}

/** What the board counts a decision as (undefined: a stack part another part refused). */
export function outcomeOf(decision: Decision): BoardOutcome | undefined {
  if (decision.shadowRefused) return 'shadow-refused';
  if (decision.failure && decision.failure.failMode !== 'memory') return 'failed';
  if (decision.allowed) return 'allowed';
  if (decision.blockedUntil !== undefined) return 'blocked';
  if (decision.blockedBy === undefined) return decision.failure ? 'failed' : undefined;
  return 'refused';
}

/** A limiter's policy as the board shows it. */
export function policyCard(limiter: Limiter): PolicyCard {
  const { policy } = limiter;
  const burst = policy.limits[0]?.burst;
  return {
    name: policy.name,
    algorithm: policy.algorithm,
    limits: policy.limits.map(({ limit, windowMs }) => ({ limit, windowMs })),
    ...(burst !== undefined && burst !== policy.limits[0]?.limit && { burst }),
    ...(policy.block && { block: { ...policy.block } }),
    shadow: policy.shadow === true,
    failMode: limiter.failMode,
  };
}
