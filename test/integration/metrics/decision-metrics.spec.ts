/**
 * Decision metrics, the same for Prometheus (prom-client's registry text, parsed) and
 * OpenTelemetry: counts per outcome, one duration observation per operation, store errors from a
 * stopped Redis, soft-limit warnings, and never a caller key in a label.
 */
import Redis from 'ioredis';
import {
  type DecisionEvent,
  DecisionEvents,
  Limiter,
  type PolicyOptions,
  RedisStore,
} from '../../../lib';
import { keyHash } from '../../../lib/core/events';
import { createTestClient, startRedisServer, uniquePrefix, warmPool } from '../../support/redis';
import { type MetricBackend, openTelemetryBackend, prometheusBackend } from './metric-backends';

const LABELS = new Set(['policy', 'outcome', 'operation', 'reason', 'le']);
const login: PolicyOptions = { name: 'login', algorithm: 'sliding-window', limit: 3, window: '1m' };
const keys = ['ip:203.0.113.9', 'email:alice@example.com'];

describe.each([prometheusBackend(), openTelemetryBackend()])('$name metrics', (backend) => {
  let client: Redis;
  beforeAll(async () => {
    client = createTestClient();
    await warmPool(client);
  });
  afterAll(() => client.quit());

  /** Fresh events with the backend's metrics and a recorder of every event, on a fresh store. */
  const setup = (backend: MetricBackend) => {
    const events = new DecisionEvents();
    const seen: DecisionEvent[] = [];
    events.on((e) => seen.push(e));
    const dispose = backend.attach(events);
    const store = new RedisStore({ client, prefix: uniquePrefix('metrics') });
    return { events, seen, dispose, store };
  };

  it('a burst of 10 at limit 3 counts 3 allowed and 7 refused; a refund counts as refunded', async () => {
    const { events, seen, store } = setup(backend);
    const limiter = new Limiter(store, login, { events });
    const decisions = await Promise.all(Array.from({ length: 10 }, () => limiter.consume(keys)));
    await limiter.peek(keys);
    await limiter.refund(decisions.find((d) => d.allowed)!);

    const metrics = await backend.read();
    expect(metrics.decisions('login')).toEqual({ allowed: 3, refused: 7, refunded: 1 });
    // Every operation is timed once; a peek is timed but is not a decision.
    expect(metrics.durations('login')).toEqual({ consume: 10, peek: 1, refund: 1 });
    expect(Object.values(metrics.durations('login')).reduce((a, b) => a + b)).toBe(seen.length);
    expect(metrics.storeErrors('login')).toEqual({});
    expect(metrics.softLimitWarnings('login')).toBe(0);
  });

  it('no raw key, email or key hash appears in any label or event', async () => {
    const { events, seen, store } = setup(backend);
    const limiter = new Limiter(store, login, { events });
    for (let i = 0; i < 5; i++) await limiter.consume(keys);
    await limiter.peek(keys);

    const metrics = await backend.read();
    const labels = metrics.labels();
    expect(labels.length).toBeGreaterThan(0);
    for (const label of labels) expect(LABELS.has(label.split('=')[0]!)).toBe(true);
    const secrets = [...keys, 'alice', 'example.com', '203.0.113', ...keys.map(keyHash)];
    for (const secret of secrets) expect(metrics.text).not.toContain(secret);
    expect(seen).toHaveLength(6);
    for (const event of seen) {
      const text = JSON.stringify(event);
      for (const secret of secrets.slice(0, 5)) expect(text).not.toContain(secret);
    }
  });

  it('a stopped Redis: failed-open and failed-closed are counted, with store errors by reason', async () => {
    const server = await startRedisServer();
    const failing = new Redis(server.url, { maxRetriesPerRequest: 0, enableOfflineQueue: false });
    try {
      await new Promise((resolve) => failing.once('ready', resolve));
      const { events } = setup(backend);
      const store = new RedisStore({ client: failing, prefix: uniquePrefix('metrics-fail') });
      // A stopped server refuses at once (no offline queue): the deadline only has to outlast the
      // first call's script load on a busy machine, not to detect the failures.
      const quiet = { events, onStoreFailure: () => undefined, timeoutMs: 10_000 };
      const open = new Limiter(store, { ...login, name: 'open', failMode: 'open' }, quiet);
      const closed = new Limiter(store, { ...login, name: 'closed', failMode: 'closed' }, quiet);
      expect((await open.consume('k')).allowed).toBe(true);
      await server.stop();
      for (let i = 0; i < 2; i++) expect((await open.consume('k')).failure).toBeDefined();
      for (let i = 0; i < 3; i++) expect((await closed.consume('k')).failure).toBeDefined();

      const metrics = await backend.read();
      expect(metrics.decisions('open')).toEqual({ allowed: 1, 'failed-open': 2 });
      expect(metrics.decisions('closed')).toEqual({ 'failed-closed': 3 });
      const errors = { ...metrics.storeErrors('open') };
      for (const [reason, n] of Object.entries(metrics.storeErrors('closed'))) {
        errors[reason] = (errors[reason] ?? 0) + n;
      }
      expect(Object.keys(errors).every((r) => r === 'error' || r === 'timeout')).toBe(true);
      expect(Object.values(errors).reduce((a, b) => a + b)).toBe(5);
      expect(metrics.durations('open')).toEqual({ consume: 3 });
      expect(metrics.durations('closed')).toEqual({ consume: 3 });
    } finally {
      failing.disconnect();
      await server.stop();
    }
  });

  it('counts consumes allowed past the soft limit', async () => {
    const { events, store } = setup(backend);
    const limiter = new Limiter(
      store,
      { name: 'api', algorithm: 'fixed-window', limit: 10, window: '1m', warnAt: 0.8 },
      { events },
    );
    for (let i = 0; i < 11; i++) await limiter.consume('key:1');
    await limiter.peek('key:1'); // a peek never warns a caller
    // The 8th, 9th and 10th reach 80 %; the 11th is refused.
    expect((await backend.read()).softLimitWarnings('api')).toBe(3);
  });

  it('counts lockouts, shadow refusals and cached refusals; cached ones are not timed', async () => {
    const { events } = setup(backend);
    const store = new RedisStore({ client, prefix: uniquePrefix('metrics'), refusalCache: true });
    const locking = new Limiter(
      store,
      { ...login, name: 'locking', limit: 1, block: { duration: '1m' } },
      { events },
    );
    const shadow = new Limiter(
      store,
      { ...login, name: 'shadow', limit: 1, shadow: true },
      { events, onShadowRefusal: () => {} },
    );
    for (let i = 0; i < 3; i++) await locking.consume('k'); // allowed, blocked, blocked (cached)
    for (let i = 0; i < 2; i++) await shadow.consume('k'); // allowed, shadow-refused
    const metrics = await backend.read();
    expect(metrics.decisions('locking')).toEqual({ allowed: 1, blocked: 2 });
    expect(metrics.durations('locking')).toEqual({ consume: 2 });
    expect(metrics.decisions('shadow')).toEqual({ allowed: 1, 'shadow-refused': 1 });
  });

  it('stops recording once disposed', async () => {
    const { events, dispose, store } = setup(backend);
    const limiter = new Limiter(store, login, { events });
    await limiter.consume('k');
    dispose();
    await limiter.consume('k');
    expect((await backend.read()).decisions('login')).toEqual({ allowed: 1 });
  });
});
