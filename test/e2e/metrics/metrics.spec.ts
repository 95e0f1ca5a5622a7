/**
 * The Nest module records metrics with nothing but an option: the registry's limiters report to
 * the module's RedlimitEvents, which feeds prom-client (or OpenTelemetry), `onDecision` and any
 * provider that injects it.
 */
import { Registry, register } from 'prom-client';
import { type DecisionEvent, RedlimitConnection, RedlimitEvents } from '../../../lib/nest';
import { keyHash } from '../../../lib/core/events';
import { InMemoryMeter } from '../../integration/metrics/in-memory-meter';
import { parseSamples, sampleSum, sumsBy } from '../../integration/metrics/prometheus-text';
import { redisUrl, startRedisServer, uniquePrefix } from '../../support/redis';
import { PLATFORMS, type RunningApp, startApp, statuses } from '../support/app';
import { metricsApp, SeenEvents } from './metrics.app';

const EMAIL = 'Alice@Example.com';

async function promCounts(registry: Registry, policy: string) {
  const samples = parseSamples(await registry.metrics());
  return {
    decisions: sumsBy(samples, 'redlimit_decisions_total', 'outcome', { policy }),
    timed: sampleSum(samples, 'redlimit_decision_duration_seconds_count', { policy }),
    storeErrors: sampleSum(samples, 'redlimit_store_errors_total', { policy }),
  };
}

describe.each(PLATFORMS)('RedlimitModule metrics on %s', (platform) => {
  let app: RunningApp | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
    register.clear();
  });

  const get = (path: string, n: number) =>
    statuses(Array.from({ length: n }, () => app!.request(path)));

  it('5 requests to a @Throttle route at limit 2: 2 allowed and 3 refused in the registry', async () => {
    const registry = new Registry();
    const seen = new SeenEvents();
    const decided: DecisionEvent[] = [];
    app = await startApp(
      metricsApp(
        {
          redis: redisUrl(),
          prefix: uniquePrefix('metrics-e2e'),
          metrics: { prometheus: { registry } },
          onDecision: (e) => decided.push(e),
        },
        seen,
      ),
      platform,
    );
    // The store's connection and function library are ready before the burst (no decision event:
    // a reset through the store itself), so a loaded machine cannot time the first calls out.
    await app.app.get(RedlimitConnection).store.reset({
      policy: 'warm-up',
      algorithm: 'fixed-window',
      limits: [{ limit: 1, windowMs: 1_000, burst: 1 }],
      keys: ['warm'],
    });
    expect((await get('/items', 5)).sort()).toEqual([200, 200, 429, 429, 429]);
    expect(await promCounts(registry, 'two')).toEqual({
      decisions: { allowed: 2, refused: 3 },
      timed: 5,
      storeErrors: 0,
    });
    // onDecision and a provider that injected RedlimitEvents saw the same five decisions.
    expect(decided.map((e) => e.outcome).sort()).toEqual([
      'allowed',
      'allowed',
      'refused',
      'refused',
      'refused',
    ]);
    expect(seen.events).toEqual(decided);
  });

  it("metrics: 'prometheus' records on prom-client's default register", async () => {
    app = await startApp(
      metricsApp(
        { redis: redisUrl(), prefix: uniquePrefix('metrics-e2e'), metrics: 'prometheus' },
        new SeenEvents(),
      ),
      platform,
    );
    await get('/items', 3);
    expect((await promCounts(register, 'two')).decisions).toEqual({ allowed: 2, refused: 1 });
  });

  it('@Attempt sign-ins: spends and refunds counted; no email or IP in any label or event', async () => {
    const registry = new Registry();
    const seen = new SeenEvents();
    app = await startApp(
      metricsApp(
        {
          redis: redisUrl(),
          prefix: uniquePrefix('metrics-e2e'),
          metrics: { prometheus: { registry } },
        },
        seen,
      ),
      platform,
    );
    const signIn = (password: string) =>
      app!.request('/sign-in', { method: 'POST', body: { email: EMAIL, password } });
    expect((await signIn('right')).status).toBe(200); // refunded
    for (let i = 0; i < 3; i++) expect((await signIn('wrong')).status).toBe(401);
    expect((await signIn('wrong')).status).toBe(429);
    expect((await promCounts(registry, 'login')).decisions).toEqual({
      allowed: 4,
      refused: 1,
      refunded: 1,
    });
    const text = await registry.metrics();
    const everything = text + JSON.stringify(seen.events);
    for (const secret of ['alice', 'Alice', 'example.com', '127.0.0.1']) {
      expect(everything).not.toContain(secret);
    }
    expect(seen.events).toHaveLength(6);
    // Keys reach listeners only as hashes (of the already hashed @Attempt keys).
    for (const e of seen.events)
      expect(e.keyHashes.every((h) => /^[0-9a-f]{16}$/.test(h))).toBe(true);
  });

  it('a stopped Redis: the 503s are counted as failed-closed, with a store error each', async () => {
    const server = await startRedisServer();
    try {
      const registry = new Registry();
      app = await startApp(
        metricsApp(
          {
            redis: server.url,
            prefix: uniquePrefix('metrics-e2e'),
            metrics: { prometheus: { registry } },
          },
          new SeenEvents(),
        ),
        platform,
      );
      expect(await get('/items', 1)).toEqual([200]);
      await server.stop();
      expect(await get('/items', 2)).toEqual([503, 503]);
      expect(await promCounts(registry, 'two')).toEqual({
        decisions: { allowed: 1, 'failed-closed': 2 },
        timed: 3,
        storeErrors: 2,
      });
    } finally {
      await server.stop();
    }
  });

  it('metrics: { opentelemetry: { meter } } counts the same decisions', async () => {
    const meter = new InMemoryMeter();
    app = await startApp(
      metricsApp(
        {
          redis: redisUrl(),
          prefix: uniquePrefix('metrics-e2e'),
          metrics: { opentelemetry: { meter } },
        },
        new SeenEvents(),
      ),
      platform,
    );
    await get('/items', 4);
    const outcomes = meter.points('redlimit.decisions', { policy: 'two' });
    expect(outcomes.map((p) => p.attributes.outcome).sort()).toEqual([
      'allowed',
      'allowed',
      'refused',
      'refused',
    ]);
    expect(meter.points('redlimit.decision.duration', { policy: 'two' })).toHaveLength(4);
  });

  it("closing the app ends the module's own subscriptions", async () => {
    const registry = new Registry();
    const decided: DecisionEvent[] = [];
    app = await startApp(
      metricsApp(
        {
          redis: redisUrl(),
          prefix: uniquePrefix('metrics-e2e'),
          metrics: { prometheus: { registry } },
          onDecision: (e) => decided.push(e),
        },
        new SeenEvents(),
      ),
      platform,
    );
    const events = app.app.get(RedlimitEvents);
    expect(events.active).toBe(true);
    await app.close();
    app = undefined;
    // The subscriber's own listener (not the module's) is all that is left.
    events.emit({
      operation: 'consume',
      policy: 'two',
      outcome: 'allowed',
      latencyMs: 1,
      keyHashes: [keyHash('k')],
    });
    expect(decided).toHaveLength(0);
    expect((await promCounts(registry, 'two')).decisions).toEqual({});
  });
});
