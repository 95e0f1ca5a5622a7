import { createHash } from 'node:crypto';
import type { Decision } from './decision';

/**
 * What a decision came to:
 * - `allowed` / `refused`: the store decided (or, with `failMode: 'memory'`, the in-process
 *   fallback did: then `failure` is set too);
 * - `failed-open`: the store failed and the policy allowed without enforcing;
 * - `failed-closed`: the store failed and the policy refused (in shadow mode: `shadow-refused`,
 *   with `failure` set);
 * - `refused-elsewhere`: a part of a stacked decision that fitted, left unspent because another
 *   part refused (so dashboards blame only the policy that refused);
 * - `refunded`: a spend was given back;
 * - `adjusted`: a spend was settled to its actual cost (`Limiter.adjust`);
 * - `blocked`: refused because a key is locked out (policy option `block`), or the refusal that
 *   started or extended the lockout;
 * - `shadow-refused`: a policy in shadow mode would have refused (on its budget, a lockout, or a
 *   store failure under fail mode `closed`); the call was allowed;
 * - `skipped`: the Nest layer let the request through without charging (allow list, `skipIf`);
 * - `denied`: the Nest layer refused the request before charging (deny list, HTTP 403);
 * - `reset`: the policy's state for the keys was deleted (`Limiter.reset`: an unlock, from code,
 *   the CLI or the ops board);
 * - `granted`: room was given to the keys (`Limiter.grant`: a one-off allowance, from code, the
 *   CLI or the ops board).
 */
export type DecisionOutcome =
  | 'allowed'
  | 'refused'
  | 'refused-elsewhere'
  | 'failed-open'
  | 'failed-closed'
  | 'refunded'
  | 'adjusted'
  | 'blocked'
  | 'shadow-refused'
  | 'skipped'
  | 'denied'
  | 'reset'
  | 'granted';

/** Which limiter operation an event reports. */
export type DecisionOperation = 'consume' | 'peek' | 'refund' | 'adjust' | 'reset' | 'grant';

/**
 * One limiter operation, as listeners see it. Carries no caller key in plain text: keys appear only
 * as `keyHashes` (computed when first read, so listeners that ignore them cost nothing).
 */
export interface DecisionEvent {
  /** `consume` (also each part of a stacked decision), `peek`, `refund`, `adjust`, `reset` or `grant`. */
  readonly operation: DecisionOperation;
  /** The policy's name. */
  readonly policy: string;
  /** What it came to. */
  readonly outcome: DecisionOutcome;
  /** Time spent waiting for the store, in ms (monotonic clock); for a stack, the whole stack's. */
  readonly latencyMs: number;
  /** The binding limit (the refusing one when refused), as in the decision. */
  readonly limit?: number;
  /** The binding limit's window, in ms. */
  readonly windowMs?: number;
  /** Units left under the binding limit. */
  readonly remaining?: number;
  /** The decision's `retryAfterMs` (0 when allowed). */
  readonly retryAfterMs?: number;
  /** Set when the store failed and the fail mode decided: why it failed. */
  readonly failure?: 'timeout' | 'error';
  /** True when allowed past the policy's soft limit (`warnAt`). */
  readonly warning?: boolean;
  /** True for a part of a stacked decision (`Limiter.consumeAll`). */
  readonly stacked?: boolean;
  /** True when the store answered from its refusal cache, without a round trip. */
  readonly cached?: boolean;
  /** For a lockout (outcome `blocked`, or `shadow-refused` by one): when it ends (store clock). */
  readonly blockedUntil?: number;
  /**
   * The live override version the call ran under (see `PolicyOverrides`); absent when it ran
   * under the policy as configured.
   */
  readonly policyVersion?: number;
  /** Each caller key as the first 16 hex digits of its SHA-256: to correlate, never to read. */
  readonly keyHashes: readonly string[];
}

/** A function that receives decision events. It must not throw (errors are reported, not raised). */
export type DecisionListener = (event: DecisionEvent) => void;

/**
 * A function that sees each consume's {@link Decision} itself, caller keys included (see
 * {@link DecisionEvents.watch}). It must not throw (errors are reported, not raised).
 */
export type DecisionWatcher = (decision: Decision) => void;

/**
 * Where limiters report every decision, refund and store failure: pass one to several limiters
 * (`new Limiter(store, policy, { events })`), subscribe with `on()`. Listeners run synchronously
 * after the decision is made; a listener that throws is reported as a process warning and never
 * changes a decision. With no listener, nothing is measured or built.
 *
 * @example
 * const events = new DecisionEvents();
 * events.on((e) => metrics.count(`ratelimit.${e.policy}.${e.outcome}`));
 * const login = new Limiter(store, { name: 'login', algorithm: 'fixed-window', limit: 10, window: '15m' }, { events });
 */
export class DecisionEvents {
  private listeners: readonly DecisionListener[] = [];
  private watchers: readonly DecisionWatcher[] = [];
  /**
   * What limiters call with each consume's decision: undefined while nobody watches.
   *
   * @internal
   */
  watcher: DecisionWatcher | undefined;

  /** Whether anyone listens (limiters skip all event work otherwise). */
  get active(): boolean {
    return this.listeners.length > 0;
  }

  /**
   * Adds a listener.
   *
   * @returns a function that removes it again
   */
  on(listener: DecisionListener): () => void {
    if (typeof listener !== 'function') {
      throw new TypeError('DecisionEvents.on() needs a function (event) => void');
    }
    this.listeners = [...this.listeners, listener];
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  /**
   * Adds a watcher: a function called with the {@link Decision} of every consume (each part of a
   * stack too) of the limiters that report here, synchronously, before the caller gets it. Unlike
   * a listener it gets the caller keys (`decision.receipt.keys`), and no event is built nor time
   * measured for it: the ops board's recorder counts decisions this way, at the cost of a function
   * call per decision. Keep watchers cheap; never keep keys longer than needed.
   *
   * @returns a function that removes it again
   */
  watch(watcher: DecisionWatcher): () => void {
    if (typeof watcher !== 'function') {
      throw new TypeError('DecisionEvents.watch() needs a function (decision) => void');
    }
    this.watchers = [...this.watchers, watcher];
    this.watcher = combined(this.watchers);
    return () => {
      this.watchers = this.watchers.filter((w) => w !== watcher);
      this.watcher = combined(this.watchers);
    };
  }

  /** Hands an event to every listener; for limiters, and for tests of listeners. */
  emit(event: DecisionEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        process.emitWarning(`redlimit: a decision listener threw: ${reason}`, 'RedlimitWarning');
      }
    }
  }
}

/** One watcher that calls each of `watchers`, reporting (never raising) what they throw. */
function combined(watchers: readonly DecisionWatcher[]): DecisionWatcher | undefined {
  if (watchers.length === 0) return undefined;
  return (decision) => {
    for (const watcher of watchers) {
      try {
        watcher(decision);
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        process.emitWarning(`redlimit: a decision watcher threw: ${reason}`, 'RedlimitWarning');
      }
    }
  };
}

/** The first 16 hex digits of a key's SHA-256. */
export function keyHash(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

/** The event of one decision; key hashes are computed when first read. */
export function decisionEvent(
  operation: DecisionOperation,
  decision: Decision,
  latencyMs: number,
  stacked = false,
  refusedElsewhere = false,
  policyVersion?: number,
): DecisionEvent {
  const { failure } = decision;
  let outcome: DecisionOutcome = decision.allowed ? 'allowed' : 'refused';
  if (decision.blockedUntil !== undefined) outcome = 'blocked';
  if (decision.shadowRefused) outcome = 'shadow-refused';
  if (refusedElsewhere) outcome = 'refused-elsewhere';
  if (failure?.failMode === 'open') outcome = 'failed-open';
  // Shadow refuses nothing: a failure its fail mode would refuse is a shadow refusal.
  if (failure?.failMode === 'closed' && !decision.shadowRefused) outcome = 'failed-closed';
  return withKeyHashes(
    {
      operation,
      policy: decision.policy,
      outcome,
      latencyMs,
      limit: decision.limit,
      windowMs: decision.windowMs,
      remaining: decision.remaining,
      retryAfterMs: decision.retryAfterMs,
      ...(failure && { failure: failure.reason }),
      ...(decision.warning && { warning: true }),
      ...(stacked && { stacked: true }),
      ...(decision.cached && { cached: true }),
      ...(decision.blockedUntil !== undefined && { blockedUntil: decision.blockedUntil }),
      ...(policyVersion !== undefined && { policyVersion }),
    },
    decision.receipt.keys,
  );
}

/** The event of one refund the store applied (a refund that failed is a settle error instead). */
export function refundEvent(
  policy: string,
  keys: readonly string[],
  latencyMs: number,
): DecisionEvent {
  return withKeyHashes({ operation: 'refund', policy, outcome: 'refunded', latencyMs }, keys);
}

/** The event of one adjustment the store applied (`Limiter.adjust`). */
export function adjustEvent(
  policy: string,
  keys: readonly string[],
  latencyMs: number,
): DecisionEvent {
  return withKeyHashes({ operation: 'adjust', policy, outcome: 'adjusted', latencyMs }, keys);
}

/** The event of one reset the store applied (`Limiter.reset`). */
export function resetEvent(
  policy: string,
  keys: readonly string[],
  latencyMs: number,
): DecisionEvent {
  return withKeyHashes({ operation: 'reset', policy, outcome: 'reset', latencyMs }, keys);
}

/** The event of one grant the store applied (`Limiter.grant`). */
export function grantEvent(
  policy: string,
  keys: readonly string[],
  latencyMs: number,
): DecisionEvent {
  return withKeyHashes({ operation: 'grant', policy, outcome: 'granted', latencyMs }, keys);
}

function withKeyHashes(
  event: Omit<DecisionEvent, 'keyHashes'>,
  keys: readonly string[],
): DecisionEvent {
  let hashes: readonly string[] | undefined;
  return Object.freeze(
    Object.defineProperty({ ...event }, 'keyHashes', {
      enumerable: true,
      get: () => (hashes ??= Object.freeze(keys.map(keyHash))),
    }) as DecisionEvent,
  );
}
