import type {
  DecisionEvent,
  DecisionListener,
  DecisionOperation,
  DecisionOutcome,
} from '../core/events';

/**
 * Upper bounds, in seconds, of the decision-duration histogram buckets: from 0.5 ms (a local
 * Redis) to 1 s (the default `timeoutMs`, where a store that hangs is given up on).
 */
export const DECISION_DURATION_BUCKETS_SECONDS: readonly number[] = Object.freeze([
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
]);

/**
 * Where {@link decisionMetricsListener} records: one method per instrument. Every argument is a
 * bounded label value (a policy name or one of a few fixed words), never a caller key.
 *
 * @example
 * const recorder: DecisionMetricsRecorder = {
 *   decision: (policy, outcome) => statsd.increment('redlimit.decisions', { policy, outcome }),
 *   duration: (policy, operation, seconds) =>
 *     statsd.histogram('redlimit.decision.duration', seconds, { policy, operation }),
 *   storeError: (policy, reason) => statsd.increment('redlimit.store.errors', { policy, reason }),
 *   softLimitWarning: (policy) => statsd.increment('redlimit.soft_limit.warnings', { policy }),
 * };
 * events.on(decisionMetricsListener(recorder));
 */
export interface DecisionMetricsRecorder {
  /**
   * A consume (each part of a stack counts), an applied refund (`outcome: 'refunded'`) or an
   * adjustment (`outcome: 'adjusted'`).
   */
  decision(policy: string, outcome: DecisionOutcome): void;
  /** Time spent on the store by any operation (consume, peek, refund), in seconds. */
  duration(policy: string, operation: DecisionOperation, seconds: number): void;
  /** The store failed or was too slow, and the fail mode decided instead. */
  storeError(policy: string, reason: 'timeout' | 'error'): void;
  /** A consume was allowed past the policy's soft limit (`warnAt`). */
  softLimitWarning(policy: string): void;
}

/**
 * A decision listener that turns events into the metrics redlimit defines, the same way for every
 * backend (Prometheus, OpenTelemetry, or a recorder of your own):
 * - every event's latency goes to `duration`, labelled with its operation, except for calls the
 *   store was not asked about (outcomes `skipped` and `denied`, and refusals answered from the
 *   refusal cache), which would drag the store's latency towards 0;
 * - consumes and refunds count as decisions; peeks do not (a peek that would be refused is not a
 *   refusal), so decision counts are what callers were actually told;
 * - events with a store failure (failed-open, failed-closed, and memory-fallback decisions) count
 *   as store errors, by reason;
 * - consumes allowed past a soft limit count as warnings.
 *
 * It never reads the event's key hashes, so they are never computed.
 *
 * @example
 * const dispose = events.on(decisionMetricsListener(recorder));
 */
export function decisionMetricsListener(recorder: DecisionMetricsRecorder): DecisionListener {
  return (event: DecisionEvent) => {
    const { policy, operation } = event;
    const { outcome } = event;
    if (outcome !== 'skipped' && outcome !== 'denied' && event.cached !== true) {
      recorder.duration(policy, operation, event.latencyMs / 1000);
    }
    if (operation !== 'peek') recorder.decision(policy, outcome);
    if (event.failure) recorder.storeError(policy, event.failure);
    if (event.warning === true && operation === 'consume') recorder.softLimitWarning(policy);
  };
}

/**
 * Checks a custom bucket list: finite, positive, strictly increasing.
 *
 * @throws RangeError naming the option
 */
export function checkBuckets(buckets: readonly number[], option: string): number[] {
  const list: unknown = buckets;
  const valid =
    Array.isArray(list) &&
    list.length > 0 &&
    buckets.every(
      (b, i) =>
        typeof b === 'number' && Number.isFinite(b) && b > 0 && (i === 0 || b > buckets[i - 1]!),
    );
  if (!valid) {
    throw new RangeError(
      `${option} must be a non-empty list of increasing positive numbers of seconds; ` +
        `got ${JSON.stringify(buckets)}`,
    );
  }
  return [...buckets];
}
