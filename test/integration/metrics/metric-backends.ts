/**
 * The two metric backends under test, behind one reading interface, so the decision-metric specs
 * run unchanged against prom-client (its registry's text output, parsed) and OpenTelemetry.
 */
import { Registry } from 'prom-client';
import { type DecisionEvents, openTelemetryMetrics, prometheusMetrics } from '../../../lib';
import { InMemoryMeter } from './in-memory-meter';
import { parseSamples, sampleSum, sumsBy } from './prometheus-text';

export interface MetricsReading {
  /** Decision counts by outcome. */
  decisions(policy: string): Record<string, number>;
  /** Duration observations by operation. */
  durations(policy: string): Record<string, number>;
  /** Store errors by reason. */
  storeErrors(policy: string): Record<string, number>;
  softLimitWarnings(policy: string): number;
  /** Every label (attribute) of every series, as `name=value`. */
  labels(): string[];
  /** Everything the backend would export, as text. */
  text: string;
}

export interface MetricBackend {
  readonly name: 'prometheus' | 'opentelemetry';
  /** Subscribes fresh metrics to `events`; returns the dispose function. */
  attach(events: DecisionEvents): () => void;
  read(): Promise<MetricsReading>;
}

export function prometheusBackend(): MetricBackend {
  let registry = new Registry();
  return {
    name: 'prometheus',
    attach: (events) => {
      registry = new Registry();
      return prometheusMetrics(events, { registry });
    },
    read: async () => {
      const text = await registry.metrics();
      const samples = parseSamples(text);
      const count = (name: string, label: string, policy: string) =>
        sumsBy(samples, name, label, { policy });
      return {
        text,
        decisions: (policy) => count('redlimit_decisions_total', 'outcome', policy),
        durations: (policy) =>
          count('redlimit_decision_duration_seconds_count', 'operation', policy),
        storeErrors: (policy) => count('redlimit_store_errors_total', 'reason', policy),
        softLimitWarnings: (policy) =>
          sampleSum(samples, 'redlimit_soft_limit_warnings_total', { policy }),
        labels: () => samples.flatMap((s) => Object.entries(s.labels).map(([k, v]) => `${k}=${v}`)),
      };
    },
  };
}

export function openTelemetryBackend(): MetricBackend {
  let meter = new InMemoryMeter();
  return {
    name: 'opentelemetry',
    attach: (events) => {
      meter = new InMemoryMeter();
      return openTelemetryMetrics(events, { meter });
    },
    read: () => {
      const count = (name: string, label: string, policy: string) => {
        const sums: Record<string, number> = {};
        for (const p of meter.points(name, { policy })) {
          const key = p.attributes[label] ?? '';
          // A histogram point is one observation; a counter point adds its value.
          sums[key] = (sums[key] ?? 0) + (name.endsWith('duration') ? 1 : p.value);
        }
        return sums;
      };
      const all = [...meter.instruments.values()].flatMap((i) => i.points);
      return Promise.resolve({
        text: JSON.stringify([...meter.instruments]),
        decisions: (policy) => count('redlimit.decisions', 'outcome', policy),
        durations: (policy) => count('redlimit.decision.duration', 'operation', policy),
        storeErrors: (policy) => count('redlimit.store.errors', 'reason', policy),
        softLimitWarnings: (policy) =>
          meter.points('redlimit.soft_limit.warnings', { policy }).reduce((n, p) => n + p.value, 0),
        labels: () => all.flatMap((p) => Object.entries(p.attributes).map(([k, v]) => `${k}=${v}`)),
      });
    },
  };
}
