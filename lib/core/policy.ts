import type { Algorithm, LimitRule, RateAlgorithm } from './algorithms/algorithm-definition';
import {
  ALGORITHM_DEFINITIONS,
  ALGORITHM_NAMES,
  RATE_ALGORITHM_NAMES,
} from './algorithms/algorithm.registry';
import { type Duration, parseDuration } from './duration.util';
import { type BlockOptions, type BlockRule, resolveBlock, unknownFields } from './policy-block';

export type { BlockOptions, BlockRule } from './policy-block';

export type { Algorithm, LimitRule, RateAlgorithm } from './algorithms/algorithm-definition';
export { MAX_SLIDING_LOG_LIMIT } from './algorithms/sliding-log.algorithm';

/** Every rate algorithm this version implements, in documentation order. */
export const ALGORITHMS: readonly RateAlgorithm[] = RATE_ALGORITHM_NAMES;

/** Every algorithm a policy can use: the rate algorithms, then `concurrency`. */
export const POLICY_ALGORITHMS: readonly Algorithm[] = ALGORITHM_NAMES;

/** Algorithms whose capacity is `burst` (default `limit`) rather than `limit`. */
const BURST_ALGORITHMS: readonly Algorithm[] = ALGORITHM_NAMES.filter(
  (name) => ALGORITHM_DEFINITIONS[name].usesBurst,
);

/**
 * What a decision does when the store fails or is slower than `timeoutMs`: `closed` refuses
 * (safe for sign-in, OTP, payments), `open` allows without enforcing (availability first),
 * `memory` keeps limiting in this process's memory until the store answers again, with this
 * process's share of the limit (a `RedisStore` divides each limit among the processes of its
 * fleet, so together they admit no more than the limit; see docs/failure-modes.md).
 */
export type FailMode = 'closed' | 'open' | 'memory';

/** Every fail mode. */
export const FAIL_MODES: readonly FailMode[] = ['closed', 'open', 'memory'];

/** One limit as written in a policy: `limit` units per `window`. */
export interface LimitOptions {
  /** Units allowed per window: a whole number of at least 1. */
  readonly limit: number;
  /** Window length: whole ms or a duration string (`'15m'`). */
  readonly window: Duration;
  /** `token-bucket` and `gcra` only: capacity (the largest burst). Default `limit`. */
  readonly burst?: number;
}

/**
 * A named rate-limit policy.
 *
 * @example
 * const login: PolicyOptions = { name: 'login', algorithm: 'sliding-window', limit: 10, window: '15m' };
 * const api: PolicyOptions = {
 *   name: 'api',
 *   algorithm: 'fixed-window',
 *   limits: [{ limit: 5, window: '1m' }, { limit: 20, window: '1h' }],
 * };
 */
export interface PolicyOptions {
  /** Identifies the policy in stored keys, headers and errors: letters, digits and `_.:-`. */
  readonly name: string;
  /** How budget is counted. */
  readonly algorithm: Algorithm;
  /** Units allowed per `window` (give `limit` + `window`, `limits`, or both). */
  readonly limit?: number;
  /** Window of `limit`. */
  readonly window?: Duration;
  /** `token-bucket` and `gcra` only: capacity of the `limit`/`window` bucket. Default `limit`. */
  readonly burst?: number;
  /** Further limits checked in the same decision: allowed only if every limit allows. */
  readonly limits?: readonly LimitOptions[];
  /** Overrides the limiter's fail mode for this policy. */
  readonly failMode?: FailMode;
  /**
   * Soft limit: once a call leaves this fraction of the binding limit used (e.g. `0.8`: the 8th
   * of 10), allowed decisions carry `warning: true` (a header over HTTP, and the decision event),
   * so clients and dashboards see the limit coming. A number above 0, at most 1. Default: none.
   */
  readonly warnAt?: number;
  /**
   * Lockouts: a consume refused because a key is out of budget also locks that key out (every
   * consume and peek naming it is refused until `decision.blockedUntil`), longer each time within
   * the strike memory. The one exception to "a refusal costs nothing": the refusing call writes
   * the lockout. Refunds do not lift it; `limiter.reset(keys)` does.
   */
  readonly block?: BlockOptions;
  /**
   * Shadow mode: decisions are made and spent as usual, but a refusal is returned as allowed, with
   * `decision.shadowRefused: true` (it spent nothing, as any refusal), so a new limit can be
   * watched in production before it is enforced. Decision events say `shadow-refused`.
   */
  readonly shadow?: boolean;
}

/** A validated policy, as a {@link Limiter} uses it. */
export interface ResolvedPolicy {
  /** The policy's name. */
  readonly name: string;
  /** The policy's algorithm. */
  readonly algorithm: Algorithm;
  /** Its limits, in the order given (top-level `limit`/`window` first). */
  readonly limits: readonly LimitRule[];
  /** The policy's own fail mode, if it sets one. */
  readonly failMode?: FailMode;
  /** The largest cost one call can ever be allowed: the smallest limit (or burst). */
  readonly maxCost: number;
  /** The soft-limit fraction, if the policy sets one. */
  readonly warnAt?: number;
  /** The lockout, if the policy sets one. */
  readonly block?: BlockRule;
  /** True in shadow mode: refusals are reported, not enforced. */
  readonly shadow?: boolean;
}

const POLICY_FIELDS: ReadonlySet<string> = new Set([
  'name',
  'algorithm',
  'limit',
  'window',
  'burst',
  'limits',
  'failMode',
  'warnAt',
  'block',
  'shadow',
]);
const LIMIT_FIELDS: ReadonlySet<string> = new Set(['limit', 'window', 'burst']);
/** What a policy name may be: 1-64 letters, digits and `_.:-`. */
export const NAME_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;

/**
 * Validates a policy and converts its durations to milliseconds.
 *
 * @throws TypeError / RangeError naming the offending field
 * @example
 * resolvePolicy({ name: 'login', algorithm: 'fixed-window', limit: 10, window: '15m' }).limits;
 * // [{ limit: 10, windowMs: 900000, burst: 10 }]
 */
export function resolvePolicy(policy: PolicyOptions): ResolvedPolicy {
  if (policy === null || typeof policy !== 'object') {
    throw new TypeError(
      `policy must be an object; got ${policy === null ? 'null' : typeof policy}`,
    );
  }
  const { name, algorithm } = policy;
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new RangeError(
      `policy.name must be 1-64 characters of letters, digits and _.:- ; got ${JSON.stringify(name)}`,
    );
  }
  unknownFields(policy, POLICY_FIELDS, `policy '${name}'`);
  if (!POLICY_ALGORITHMS.includes(algorithm)) {
    throw new RangeError(
      `policy.algorithm must be one of ${POLICY_ALGORITHMS.map((a) => `'${a}'`).join(', ')}; got ${JSON.stringify(algorithm)}`,
    );
  }
  const given: Array<{ options: Partial<LimitOptions>; path: string }> = [];
  if (policy.limit !== undefined || policy.window !== undefined) {
    given.push({
      options: { limit: policy.limit, window: policy.window, burst: policy.burst },
      path: 'policy',
    });
  }
  if (policy.limits !== undefined) {
    const list: unknown = policy.limits; // narrowing the typed field would widen it to any[]
    if (!Array.isArray(list)) {
      throw new TypeError('policy.limits must be an array of { limit, window }');
    }
    policy.limits.forEach((options, index) =>
      given.push({ options, path: `policy.limits[${index}]` }),
    );
  }
  if (given.length === 0) {
    throw new TypeError(`policy '${name}' needs limit and window (or limits)`);
  }
  const definition = ALGORITHM_DEFINITIONS[algorithm];
  const limits = given.map(({ options, path }) =>
    resolveLimit(options, path, definition.usesBurst),
  );
  definition.checkLimits?.({ policy: name, limits, paths: given.map(({ path }) => path) });
  const { failMode } = policy;
  if (failMode !== undefined && !FAIL_MODES.includes(failMode)) {
    throw new RangeError(
      `policy.failMode must be 'closed', 'open' or 'memory'; got ${JSON.stringify(failMode)}`,
    );
  }
  const { warnAt } = policy;
  if (
    warnAt !== undefined &&
    (typeof warnAt !== 'number' || !Number.isFinite(warnAt) || warnAt <= 0 || warnAt > 1)
  ) {
    throw new RangeError(
      `policy.warnAt must be a fraction above 0 and at most 1 (0.8 = 80 %); got ${String(warnAt)}`,
    );
  }
  const block = policy.block === undefined ? undefined : resolveBlock(policy.block);
  if (block !== undefined) definition.checkBlock?.(name);
  if (block?.restart && limits.length > 1) {
    throw new RangeError(
      `policy '${name}': policy.block.restart needs a policy with one limit: a lockout that forgot ` +
        'every limit would let a caller through the longer ones at each lockout end; stack one ' +
        'policy per limit (Limiter.consumeAll), or drop restart',
    );
  }
  const { shadow } = policy;
  if (shadow !== undefined && typeof shadow !== 'boolean') {
    throw new TypeError(`policy.shadow must be true or false; got ${JSON.stringify(shadow)}`);
  }
  return Object.freeze({
    name,
    algorithm,
    limits: Object.freeze(limits),
    maxCost: Math.min(...limits.map((rule) => rule.burst)),
    ...(failMode !== undefined && { failMode }),
    ...(warnAt !== undefined && { warnAt }),
    ...(block !== undefined && { block }),
    ...(shadow === true && { shadow }),
  });
}

function resolveLimit(options: Partial<LimitOptions>, path: string, usesBurst: boolean): LimitRule {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`${path} must be an object { limit, window, burst? }`);
  }
  unknownFields(options, LIMIT_FIELDS, path);
  const { limit, window, burst } = options;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1) {
    throw new RangeError(
      `${path}.limit must be a whole number of at least 1; got ${String(limit)}`,
    );
  }
  if (window === undefined) {
    throw new TypeError(`${path}.window is required`);
  }
  const windowMs = parseDuration(window, `${path}.window`);
  // The scripts compare limit × window in Lua numbers (doubles): keep the product exact.
  if (limit * windowMs > Number.MAX_SAFE_INTEGER) {
    throw new RangeError(
      `${path}: limit × window must stay below 2^53 (${limit} × ${windowMs} ms is too large)`,
    );
  }
  if (burst !== undefined && !usesBurst) {
    throw new RangeError(
      `${path}.burst applies to ${BURST_ALGORITHMS.map((a) => `'${a}'`).join(' and ')} only`,
    );
  }
  if (
    burst !== undefined &&
    (typeof burst !== 'number' || !Number.isSafeInteger(burst) || burst < 1)
  ) {
    throw new RangeError(
      `${path}.burst must be a whole number of at least 1; got ${String(burst)}`,
    );
  }
  const capacity = burst ?? limit;
  if (capacity * windowMs > Number.MAX_SAFE_INTEGER) {
    throw new RangeError(
      `${path}: burst × window must stay below 2^53 (${capacity} × ${windowMs} ms is too large)`,
    );
  }
  return Object.freeze({ limit, windowMs, burst: capacity });
}
