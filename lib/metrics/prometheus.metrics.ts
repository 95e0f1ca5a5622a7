import type * as PromClient from 'prom-client';
import type { DecisionEvents } from '../core/events';
import {
  checkBuckets,
  DECISION_DURATION_BUCKETS_SECONDS,
  decisionMetricsListener,
} from './decision-metrics';
import { loadOptionalPeer } from './missing-peer.error';

/**
 * A prom-client `Registry` (or anything shaped like one). Structural, so these typings do not
 * need prom-client installed.
 */
export interface PrometheusRegistry {
  /**
   * The metric registered under `name`, if any: redlimit reuses it, so calling
   * {@link prometheusMetrics} twice on one registry does not throw a duplicate-name error.
   */
  getSingleMetric(name: string): unknown;
  /** Every metric of the registry in the Prometheus text format (what `GET /metrics` serves). */
  metrics(): Promise<string>;
}

/** Options of {@link prometheusMetrics}. */
export interface PrometheusMetricsOptions {
  /** Where the metrics are registered. Default: prom-client's default `register`. */
  readonly registry?: PrometheusRegistry;
  /** Prepended to every metric name, e.g. `'myapp_'` → `myapp_redlimit_decisions_total`. */
  readonly prefix?: string;
  /** Upper bounds of the duration histogram, in seconds. Default: 0.5 ms to 1 s. */
  readonly buckets?: readonly number[];
}

const METRIC_PREFIX = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/**
 * Records decision events as Prometheus metrics through prom-client (an optional peer, loaded on
 * this call):
 *
 * - `redlimit_decisions_total{policy,outcome}`: consumes, refunds and adjustments by outcome
 *   (`allowed`, `refused`, `refused-elsewhere`, `blocked`, `shadow-refused`, `skipped`, `denied`,
 *   `failed-open`, `failed-closed`, `refunded`, `adjusted`); peeks are not decisions;
 * - `redlimit_decision_duration_seconds{policy,operation}`: time on the store of every consume,
 *   peek, refund and adjustment the store was asked about (not `skipped`, `denied` or refusal-cache answers);
 * - `redlimit_store_errors_total{policy,reason}`: store failures (`timeout`, `error`) the fail
 *   mode absorbed;
 * - `redlimit_soft_limit_warnings_total{policy}`: consumes allowed past the policy's `warnAt`.
 *
 * Labels carry policy names and fixed words only, never a caller key. Calling it again on the same
 * registry reuses the metrics already there.
 *
 * @returns a function that stops recording (the metrics stay registered)
 * @throws MissingPeerDependencyError when prom-client is not installed
 * @throws TypeError when the registry holds a metric of the same name of another type or labels
 *
 * @example
 * import { register } from 'prom-client';
 *
 * const events = new DecisionEvents();
 * const stop = prometheusMetrics(events); // prom-client's default register
 * const login = new Limiter(store, { name: 'login', algorithm: 'fixed-window', limit: 10, window: '15m' }, { events });
 * // GET /metrics: res.type(register.contentType).send(await register.metrics())
 */
export function prometheusMetrics(
  events: DecisionEvents,
  options: PrometheusMetricsOptions = {},
): () => void {
  const prom = loadOptionalPeer<typeof PromClient>(
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    () => require('prom-client'),
    'prom-client',
    'Prometheus metrics',
  );
  const registry = (options.registry ?? prom.register) as PromClient.Registry;
  const prefix = options.prefix ?? '';
  if (typeof prefix !== 'string' || (prefix !== '' && !METRIC_PREFIX.test(prefix))) {
    throw new RangeError(
      `prometheusMetrics prefix must match ${String(METRIC_PREFIX)}; got ${JSON.stringify(prefix)}`,
    );
  }
  const buckets = checkBuckets(
    options.buckets ?? DECISION_DURATION_BUCKETS_SECONDS,
    'prometheusMetrics buckets',
  );
  const registers = [registry];
  const counter = (name: string, help: string, labelNames: string[]) =>
    existing<PromClient.Counter>(registry, prefix + name, 'counter', labelNames) ??
    new prom.Counter({ name: prefix + name, help, labelNames, registers });

  const decisions = counter(
    'redlimit_decisions_total',
    'Rate-limit decisions (consumes), refunds and adjustments, by policy and outcome.',
    ['policy', 'outcome'],
  );
  const errors = counter(
    'redlimit_store_errors_total',
    'Store failures or timeouts a rate-limit decision absorbed through its fail mode.',
    ['policy', 'reason'],
  );
  const warnings = counter(
    'redlimit_soft_limit_warnings_total',
    "Consumes allowed past the policy's soft limit (warnAt).",
    ['policy'],
  );
  const durationName = `${prefix}redlimit_decision_duration_seconds`;
  const durationLabels = ['policy', 'operation'];
  const duration =
    existing<PromClient.Histogram>(registry, durationName, 'histogram', durationLabels) ??
    new prom.Histogram({
      name: durationName,
      help: 'Time a rate-limit operation (consume, peek, refund) spent on the store, in seconds.',
      labelNames: durationLabels,
      buckets,
      registers,
    });

  return events.on(
    decisionMetricsListener({
      decision: (policy, outcome) => decisions.inc({ policy, outcome }),
      duration: (policy, operation, seconds) => duration.observe({ policy, operation }, seconds),
      storeError: (policy, reason) => errors.inc({ policy, reason }),
      softLimitWarning: (policy) => warnings.inc({ policy }),
    }),
  );
}

/**
 * The metric of that name already in the registry (a second call, or another redlimit module on
 * the same registry), checked by shape: two copies of prom-client must still work together.
 */
function existing<T>(
  registry: PromClient.Registry,
  name: string,
  type: 'counter' | 'histogram',
  labelNames: readonly string[],
): T | undefined {
  const metric = registry.getSingleMetric(name) as
    | { inc?: unknown; dec?: unknown; observe?: unknown; zero?: unknown; labelNames?: unknown }
    | undefined;
  if (metric === undefined) return undefined;
  const typeMatches =
    type === 'counter'
      ? typeof metric.inc === 'function' && metric.dec === undefined && metric.observe === undefined
      : typeof metric.observe === 'function' && typeof metric.zero === 'function';
  const labels = Array.isArray(metric.labelNames) ? [...(metric.labelNames as string[])] : [];
  if (!typeMatches || labels.sort().join() !== [...labelNames].sort().join()) {
    throw new TypeError(
      `prometheusMetrics: the registry already has a metric '${name}' that is not a ${type} ` +
        `labelled ${labelNames.join(', ')}; remove it, or pass another registry or prefix`,
    );
  }
  return metric as T;
}
