/** prometheusMetrics and prom-client's registries: reuse, clashes, prefix, default register. */
import { Gauge, Registry, register } from 'prom-client';
import { DecisionEvents, Limiter, MemoryStore, prometheusMetrics } from '../../../lib';
import { parseSamples, sampleSum, sumsBy } from './prometheus-text';

const policy = { name: 'api', algorithm: 'fixed-window', limit: 2, window: '1m' } as const;

async function decisionsBy(registry: Registry, name = 'redlimit_decisions_total') {
  return sumsBy(parseSamples(await registry.metrics()), name, 'outcome', { policy: 'api' });
}

describe('prometheusMetrics', () => {
  it('registering twice on one registry reuses the metrics: both count into the same series', async () => {
    const registry = new Registry();
    const first = new DecisionEvents();
    const second = new DecisionEvents();
    prometheusMetrics(first, { registry });
    expect(() => prometheusMetrics(second, { registry })).not.toThrow();
    const store = new MemoryStore();
    await new Limiter(store, policy, { events: first }).consume('a');
    await new Limiter(store, policy, { events: second }).consume('b');
    expect(await decisionsBy(registry)).toEqual({ allowed: 2 });
    const samples = parseSamples(await registry.metrics());
    expect(sampleSum(samples, 'redlimit_decision_duration_seconds_count')).toBe(2);
  });

  it('exposes the four metrics with help text, and histogram buckets from 0.5 ms to 1 s', async () => {
    const registry = new Registry();
    const events = new DecisionEvents();
    prometheusMetrics(events, { registry });
    await new Limiter(new MemoryStore(), policy, { events }).consume('a');
    const text = await registry.metrics();
    for (const [name, type] of [
      ['redlimit_decisions_total', 'counter'],
      ['redlimit_decision_duration_seconds', 'histogram'],
      ['redlimit_store_errors_total', 'counter'],
      ['redlimit_soft_limit_warnings_total', 'counter'],
    ]) {
      expect(text).toContain(`# TYPE ${name} ${type}`);
      expect(text).toMatch(new RegExp(`# HELP ${name} \\S`));
    }
    const buckets = parseSamples(text)
      .filter((s) => s.name === 'redlimit_decision_duration_seconds_bucket')
      .map((s) => s.labels.le);
    expect(buckets[0]).toBe('0.0005');
    expect(buckets.slice(-2)).toEqual(['1', '+Inf']);
  });

  it('a metric of the same name but another type is reported when registering, not later', () => {
    const registry = new Registry();
    new Gauge({ name: 'redlimit_decisions_total', help: 'mine', registers: [registry] });
    expect(() => prometheusMetrics(new DecisionEvents(), { registry })).toThrow(
      /already has a metric 'redlimit_decisions_total' that is not a counter/,
    );
  });

  it('prefix keeps a second set of metrics apart', async () => {
    const registry = new Registry();
    const events = new DecisionEvents();
    prometheusMetrics(events, { registry });
    prometheusMetrics(events, { registry, prefix: 'edge_' });
    await new Limiter(new MemoryStore(), policy, { events }).consume('a');
    expect(await decisionsBy(registry)).toEqual({ allowed: 1 });
    expect(await decisionsBy(registry, 'edge_redlimit_decisions_total')).toEqual({ allowed: 1 });
  });

  it("uses prom-client's default register when given none", async () => {
    const events = new DecisionEvents();
    const dispose = prometheusMetrics(events);
    try {
      await new Limiter(new MemoryStore(), policy, { events }).consume('a');
      expect(await decisionsBy(register)).toEqual({ allowed: 1 });
    } finally {
      dispose();
      register.clear();
    }
  });

  it('rejects a prefix Prometheus cannot use, and buckets that are not increasing', () => {
    const events = new DecisionEvents();
    const registry = new Registry();
    expect(() => prometheusMetrics(events, { registry, prefix: 'my-app.' })).toThrow(RangeError);
    expect(() => prometheusMetrics(events, { registry, buckets: [0.1, 0.01] })).toThrow(
      /buckets must be a non-empty list of increasing positive numbers/,
    );
    expect(events.active).toBe(false);
  });
});
