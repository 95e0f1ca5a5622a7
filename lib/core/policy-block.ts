import { parseDuration, type Duration } from './duration.util';
import { checkKnownNames } from './options.util';

// A policy's lockout (option `block`): its options, and their validation (see `resolvePolicy`).

/**
 * A lockout (policy option `block`): a caller key refused for lack of budget is refused outright
 * for `duration`, and for longer each time it happens again soon after.
 *
 * @example
 * // 1 minute, then 2, 4, 8 … at most an hour; forgotten after a day without a lockout.
 * const block: BlockOptions = { duration: '1m', factor: 2, max: '1h', forgetAfter: '1d' };
 */
export interface BlockOptions {
  /**
   * How long the first lockout lasts. `0`: the policy starts none, and only honours the lockouts
   * another limiter of the same policy name wrote on its keys (a route that does not lock out
   * beside one that does, sharing a budget; `RedlimitThrottlerStorage` uses it for
   * `blockDuration: 0`).
   */
  readonly duration: Duration;
  /**
   * Each lockout that follows within `forgetAfter` of the previous one's end lasts this many times
   * as long as the previous one: a number from 1 (no escalation, the default) to 100.
   */
  readonly factor?: number;
  /** The longest lockout. Default: `duration` or a day, whichever is longer. */
  readonly max?: Duration;
  /**
   * How long after a lockout ends the next one still escalates (the caller's strike memory).
   * Default a day.
   */
  readonly forgetAfter?: Duration;
  /**
   * When a lockout starts, forget the key's count too, so that once it ends the caller starts
   * over from a full budget (as @nestjs/throttler's `blockDuration` does). Default false: the
   * budget still refuses until its window frees. Only for a policy with one limit. Receipts of
   * spends made before the lockout refund and adjust nothing afterwards (their count is gone).
   */
  readonly restart?: boolean;
}

/** A validated {@link BlockOptions}, in ms. */
export interface BlockRule {
  /** The first lockout's length. */
  readonly durationMs: number;
  /** Escalation factor (≥ 1). */
  readonly factor: number;
  /** The longest lockout. */
  readonly maxMs: number;
  /** Strike memory after a lockout ends. */
  readonly forgetAfterMs: number;
  /** Whether a lockout that starts forgets the key's count (see {@link BlockOptions.restart}). */
  readonly restart: boolean;
}

const BLOCK_FIELDS: ReadonlySet<string> = new Set([
  'duration',
  'factor',
  'max',
  'forgetAfter',
  'restart',
]);

/** Lockouts and strike memories are bounded, so `until + forgetAfter` stays exact everywhere. */
const MAX_BLOCK_MS = 366 * 86_400_000;

/**
 * Validates a policy's `block` and converts its durations to milliseconds.
 *
 * @throws TypeError / RangeError naming the offending field
 */
export function resolveBlock(options: BlockOptions): BlockRule {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(
      'policy.block must be an object { duration, factor?, max?, forgetAfter?, restart? }',
    );
  }
  unknownFields(options, BLOCK_FIELDS, 'policy.block');
  if (options.duration === undefined) throw new TypeError('policy.block.duration is required');
  // 0: the policy starts no lockout, and honours those another limiter of its name wrote.
  const durationMs =
    options.duration === 0
      ? 0
      : boundedBlock(parseDuration(options.duration, 'policy.block.duration'), 'duration');
  const factor = options.factor ?? 1;
  if (typeof factor !== 'number' || !Number.isFinite(factor) || factor < 1 || factor > 100) {
    throw new RangeError(
      `policy.block.factor must be a number from 1 to 100; got ${String(factor)}`,
    );
  }
  const maxMs =
    options.max === undefined
      ? Math.max(durationMs, 86_400_000)
      : boundedBlock(parseDuration(options.max, 'policy.block.max'), 'max');
  if (maxMs < durationMs) {
    throw new RangeError(
      `policy.block.max (${maxMs} ms) must be at least policy.block.duration (${durationMs} ms)`,
    );
  }
  const forgetAfterMs =
    options.forgetAfter === undefined
      ? 86_400_000
      : boundedBlock(parseDuration(options.forgetAfter, 'policy.block.forgetAfter'), 'forgetAfter');
  const restart = options.restart ?? false;
  if (typeof restart !== 'boolean') {
    throw new TypeError(
      `policy.block.restart must be true or false; got ${JSON.stringify(restart)}`,
    );
  }
  if (durationMs === 0 && restart) {
    throw new RangeError(
      'policy.block.restart needs a duration: a policy that starts no lockout forgets nothing',
    );
  }
  return Object.freeze({ durationMs, factor, maxMs, forgetAfterMs, restart });
}

function boundedBlock(ms: number, field: string): number {
  if (ms > MAX_BLOCK_MS) {
    throw new RangeError(`policy.block.${field} must be at most 366 days; got ${ms} ms`);
  }
  return ms;
}

/** Refuses a field the object type does not know (a typo must not silently change a limit). */
export function unknownFields(value: object, known: ReadonlySet<string>, path: string): void {
  checkKnownNames(
    value,
    known,
    (field, list) => `${path}: '${field}' is not a field (known: ${list})`,
  );
}
