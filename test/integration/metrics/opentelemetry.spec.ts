/**
 * openTelemetryMetrics: the instruments it creates, and the default meter taken from
 * @opentelemetry/api's global MeterProvider.
 */
import { type Meter, type MeterProvider, metrics } from '@opentelemetry/api';
import {
  DECISION_DURATION_BUCKETS_SECONDS,
  DecisionEvents,
  Limiter,
  MemoryStore,
  openTelemetryMetrics,
} from '../../../lib';
import { InMemoryMeter } from './in-memory-meter';

const policy = { name: 'api', algorithm: 'fixed-window', limit: 2, window: '1m' } as const;

describe('openTelemetryMetrics', () => {
  afterEach(() => metrics.disable());

  it('creates counters of decisions, store errors and warnings, and a duration histogram in seconds', () => {
    const meter = new InMemoryMeter();
    openTelemetryMetrics(new DecisionEvents(), { meter });
    expect(
      Object.fromEntries(
        [...meter.instruments].map(([name, i]) => [name, [i.kind, i.options?.unit]]),
      ),
    ).toEqual({
      'redlimit.decisions': ['counter', '{decision}'],
      'redlimit.decision.duration': ['histogram', 's'],
      'redlimit.store.errors': ['counter', '{error}'],
      'redlimit.soft_limit.warnings': ['counter', '{decision}'],
    });
    expect(
      meter.instruments.get('redlimit.decision.duration')?.options?.advice
        ?.explicitBucketBoundaries,
    ).toEqual(DECISION_DURATION_BUCKETS_SECONDS);
  });

  it("without a meter, uses the global MeterProvider's 'redlimit' meter", async () => {
    const meter = new InMemoryMeter();
    const asked: string[] = [];
    const provider: MeterProvider = {
      getMeter: (name) => {
        asked.push(name);
        return meter as unknown as Meter;
      },
    };
    metrics.setGlobalMeterProvider(provider);
    const events = new DecisionEvents();
    openTelemetryMetrics(events);
    const limiter = new Limiter(new MemoryStore(), policy, { events });
    for (let i = 0; i < 3; i++) await limiter.consume('k');
    expect(asked).toEqual(['redlimit']);
    const outcomes = meter.points('redlimit.decisions').map((p) => p.attributes.outcome);
    expect(outcomes).toEqual(['allowed', 'allowed', 'refused']);
    expect(meter.points('redlimit.decision.duration', { operation: 'consume' })).toHaveLength(3);
  });

  it("accepts @opentelemetry/api's own Meter type (the no-op one here)", async () => {
    const meter: Meter = metrics.getMeter('redlimit-test');
    const events = new DecisionEvents();
    const dispose = openTelemetryMetrics(events, { meter });
    expect(events.active).toBe(true);
    await new Limiter(new MemoryStore(), policy, { events }).consume('k');
    dispose();
    expect(events.active).toBe(false);
  });

  it('rejects something that is not a meter', () => {
    const meter = {} as unknown as InMemoryMeter;
    expect(() => openTelemetryMetrics(new DecisionEvents(), { meter })).toThrow(TypeError);
  });
});
