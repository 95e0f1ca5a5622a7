import type * as OpenTelemetryApi from '@opentelemetry/api';
import type { DecisionEvents } from '../core/events';
import {
  checkBuckets,
  DECISION_DURATION_BUCKETS_SECONDS,
  decisionMetricsListener,
} from './decision-metrics';
import { loadOptionalPeer } from './missing-peer.error';

/** Attributes redlimit records: bounded words and policy names only. */
export type OpenTelemetryAttributes = Readonly<Record<string, string>>;

/** Instrument options redlimit passes (a subset of OpenTelemetry's `MetricOptions`). */
export interface OpenTelemetryInstrumentOptions {
  /** What the instrument measures, in a sentence. */
  description?: string;
  /** The unit, in UCUM: `'s'` for the duration histogram, `'{decision}'` or `'{error}'` for counters. */
  unit?: string;
  /** Hints to the SDK; redlimit sets only the histogram's bucket boundaries. */
  advice?: {
    /** Upper bounds of the duration histogram's buckets, in seconds (the `buckets` option). */
    explicitBucketBoundaries?: number[];
  };
}

/**
 * An OpenTelemetry `Meter` (from `@opentelemetry/api`, or anything shaped like one). Structural,
 * so these typings do not need `@opentelemetry/api` installed.
 */
export interface OpenTelemetryMeter {
  /** Creates a counter (`redlimit.decisions`, `redlimit.store.errors`, `redlimit.soft_limit.warnings`). */
  createCounter(
    name: string,
    options?: OpenTelemetryInstrumentOptions,
  ): {
    /** Adds `value` (redlimit adds 1 per event) to the series of `attributes`. */
    add(value: number, attributes?: OpenTelemetryAttributes): void;
  };
  /** Creates a histogram (`redlimit.decision.duration`, in seconds). */
  createHistogram(
    name: string,
    options?: OpenTelemetryInstrumentOptions,
  ): {
    /** Records one measurement (a decision's duration, in seconds) in the series of `attributes`. */
    record(value: number, attributes?: OpenTelemetryAttributes): void;
  };
}

/** Options of {@link openTelemetryMetrics}. */
export interface OpenTelemetryMetricsOptions {
  /**
   * The meter to create the instruments on. Default: `metrics.getMeter('redlimit')` of
   * `@opentelemetry/api`, i.e. the global `MeterProvider` registered when this is called (start
   * the OpenTelemetry SDK before the app, as its docs say, or pass a meter).
   */
  readonly meter?: OpenTelemetryMeter;
  /** Explicit bucket boundaries of the duration histogram, in seconds. Default: 0.5 ms to 1 s. */
  readonly buckets?: readonly number[];
}

/**
 * Records decision events as OpenTelemetry metrics (through `@opentelemetry/api`, an optional
 * peer loaded on this call when no `meter` is given). The same instruments as
 * {@link prometheusMetrics}, named the OpenTelemetry way:
 *
 * - `redlimit.decisions` (counter; `policy`, `outcome`): consumes, refunds and adjustments by
 *   outcome;
 * - `redlimit.decision.duration` (histogram, `s`; `policy`, `operation`): every consume, peek,
 *   refund and adjustment;
 * - `redlimit.store.errors` (counter; `policy`, `reason`): store failures the fail mode absorbed;
 * - `redlimit.soft_limit.warnings` (counter; `policy`): consumes allowed past `warnAt`.
 *
 * Attributes carry policy names and fixed words only, never a caller key.
 *
 * @returns a function that stops recording
 * @throws MissingPeerDependencyError when no `meter` is given and `@opentelemetry/api` is missing
 *
 * @example
 * const events = new DecisionEvents();
 * const stop = openTelemetryMetrics(events); // metrics.getMeter('redlimit')
 * const api = new Limiter(store, { name: 'api', algorithm: 'sliding-window', limit: 100, window: '1m' }, { events });
 */
export function openTelemetryMetrics(
  events: DecisionEvents,
  options: OpenTelemetryMetricsOptions = {},
): () => void {
  const buckets = checkBuckets(
    options.buckets ?? DECISION_DURATION_BUCKETS_SECONDS,
    'openTelemetryMetrics buckets',
  );
  const meter =
    options.meter ??
    loadOptionalPeer<typeof OpenTelemetryApi>(
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      () => require('@opentelemetry/api'),
      '@opentelemetry/api',
      'OpenTelemetry metrics',
    ).metrics.getMeter('redlimit');
  if (typeof meter?.createCounter !== 'function' || typeof meter.createHistogram !== 'function') {
    throw new TypeError('openTelemetryMetrics meter must be an OpenTelemetry Meter');
  }
  const decisions = meter.createCounter('redlimit.decisions', {
    description: 'Rate-limit decisions (consumes), refunds and adjustments, by policy and outcome.',
    unit: '{decision}',
  });
  const duration = meter.createHistogram('redlimit.decision.duration', {
    description: 'Time a rate-limit operation (consume, peek, refund) spent on the store.',
    unit: 's',
    advice: { explicitBucketBoundaries: buckets },
  });
  const errors = meter.createCounter('redlimit.store.errors', {
    description: 'Store failures or timeouts a rate-limit decision absorbed through its fail mode.',
    unit: '{error}',
  });
  const warnings = meter.createCounter('redlimit.soft_limit.warnings', {
    description: "Consumes allowed past the policy's soft limit (warnAt).",
    unit: '{decision}',
  });
  return events.on(
    decisionMetricsListener({
      decision: (policy, outcome) => decisions.add(1, { policy, outcome }),
      duration: (policy, operation, seconds) => duration.record(seconds, { policy, operation }),
      storeError: (policy, reason) => errors.add(1, { policy, reason }),
      softLimitWarning: (policy) => warnings.add(1, { policy }),
    }),
  );
}
