import type { Redis } from 'ioredis';
import { LimiterRegistry, RedlimitConfigError } from '../../../lib/nest';
import { createTestClient, uniquePrefix, warmPool } from '../../support/redis';
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { allowDenyApp, envListsApp, optionsApp, Seen } from './allow-deny.app';

const RATE_LIMIT_HEADERS = [
  'ratelimit',
  'ratelimit-policy',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'retry-after',
];

/** The rate-limit headers a response carries (none expected for allowed and denied callers). */
const rateLimitHeaders = (response: Response) =>
  RATE_LIMIT_HEADERS.filter((name) => response.headers.has(name));

describe.each(PLATFORMS)('allow and deny lists, skipIf, on %s', (platform) => {
  let client: Redis;
  let app: RunningApp;
  let prefix: string;
  let seen: Seen;

  /** A request from `ip`, through the trusted loopback proxy. */
  const from = (ip: string, path = '/items', init: RequestInit & { headers?: object } = {}) =>
    app.request(path, { ...init, headers: { 'x-forwarded-for': ip, ...init.headers } });
  /** Redis keys the module wrote: none means nothing was charged. */
  const storedKeys = () => client.keys(`${prefix}*`);
  /** What the next request from `ip` to GET /items would be told: peek, spends nothing. */
  const peekItems = (ip: string) =>
    app.app.get(LimiterRegistry).get('two').peek(`ItemsController.list /items|ip:${ip}`);

  beforeAll(async () => {
    client = createTestClient();
    await warmPool(client);
  });
  afterAll(() => client.quit());
  beforeEach(async () => {
    prefix = uniquePrefix('e2e-allow-deny');
    seen = new Seen();
    app = await startApp(allowDenyApp(client, prefix, seen), platform);
  });
  afterEach(() => app.close());

  it('a denied IPv4 address (a CIDR range) gets 403 with no rate-limit headers; nothing is charged', async () => {
    const denied = await from('203.0.113.7');
    expect(denied.status).toBe(403);
    expect(await denied.json()).toEqual({
      statusCode: 403,
      error: 'Forbidden',
      message: 'Access denied',
    });
    expect(rateLimitHeaders(denied)).toEqual([]);
    expect((await from('203.0.113.7')).status).toBe(403);
    expect((await from('203.0.113.7')).status).toBe(403);
    expect(seen.handled).toBe(0);
    expect(await storedKeys()).toEqual([]);
    // The full budget is still there: the first of 2 would leave 1.
    expect(await peekItems('203.0.113.7')).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('a denied IPv6 range, an API key and a user agent get 403; a neighbour outside them is limited as usual', async () => {
    expect((await from('2001:db8:bad:1::5')).status).toBe(403);
    expect(
      (await from('192.0.2.1', '/items', { headers: { 'x-api-key': 'deny-key-0123456789' } }))
        .status,
    ).toBe(403);
    expect(
      (await from('192.0.2.1', '/items', { headers: { 'user-agent': 'BadBot/3.1' } })).status,
    ).toBe(403);
    expect(await storedKeys()).toEqual([]);
    const neighbour = await from('2001:db8:bae::5');
    expect(neighbour.status).toBe(200);
    expect(neighbour.headers.get('ratelimit-policy')).toBe('"two";q=2;w=3600');
  });

  it('deny wins over allow: an address on both lists is refused', async () => {
    expect((await from('203.0.113.9')).status).toBe(403);
    expect(
      (await from('198.51.100.4', '/items', { headers: { 'user-agent': 'BadBot/1' } })).status,
    ).toBe(403);
  });

  it('an allowed address gets 200 past the limit, without rate-limit headers; nothing is charged', async () => {
    for (let i = 0; i < 4; i++) {
      const response = await from('198.51.100.20');
      expect(response.status).toBe(200);
      expect(rateLimitHeaders(response)).toEqual([]);
    }
    expect(seen.handled).toBe(4);
    expect(await storedKeys()).toEqual([]);
    expect(await peekItems('198.51.100.20')).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('an allowed IPv6 address is matched exactly, not by the /64 group the limits use', async () => {
    for (let i = 0; i < 3; i++) expect((await from('2001:db8:600d::1')).status).toBe(200);
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push((await from('2001:db8:600d::2')).status);
    expect(codes).toEqual([200, 200, 429]);
  });

  it('an allowed API key or user agent (string or RegExp) is not charged', async () => {
    const as = (headers: Record<string, string>) => from('192.0.2.7', '/items', { headers });
    for (let i = 0; i < 3; i++) {
      expect((await as({ 'x-api-key': 'allow-key-0123456789' })).status).toBe(200);
      expect((await as({ 'user-agent': 'monitor/1.0' })).status).toBe(200);
      expect((await as({ 'user-agent': 'Probe/7 (health)' })).status).toBe(200);
    }
    expect(await storedKeys()).toEqual([]);
    expect((await as({ 'x-api-key': 'allow-key-012345678' })).status).toBe(200);
    expect((await as({ 'user-agent': 'monitor/1.01' })).status).toBe(200);
    expect((await as({})).status).toBe(429);
  });

  it('skipIf, sync and async: not charged, no headers; never asked for denied or allowed callers', async () => {
    for (let i = 0; i < 3; i++) {
      const sync = await from('192.0.2.8', '/items', { headers: { 'x-skip-sync': 'yes' } });
      const async = await from('192.0.2.8', '/items', { headers: { 'x-skip-async': 'yes' } });
      expect([sync.status, async.status]).toEqual([200, 200]);
      expect([...rateLimitHeaders(sync), ...rateLimitHeaders(async)]).toEqual([]);
    }
    expect(await storedKeys()).toEqual([]);
    expect(seen.skipIfCalls).toBe(6);
    await from('203.0.113.7', '/items', { headers: { 'x-skip-sync': 'yes' } });
    expect(
      (await from('203.0.113.7', '/items', { headers: { 'x-skip-sync': 'yes' } })).status,
    ).toBe(403);
    await from('198.51.100.1');
    expect(seen.skipIfCalls).toBe(6);
    // Guard and interceptor on one call share one answer: asked once.
    await from('192.0.2.9', '/session/both', {
      method: 'POST',
      headers: { 'x-skip-async': 'yes' },
    });
    expect(seen.skipIfCalls).toBe(7);
  });

  it('@Attempt: an allowed caller runs the handler with an attempt that charged nothing; refund() is harmless', async () => {
    for (let i = 0; i < 3; i++) {
      const response = await from('198.51.100.30', '/session', { method: 'POST' });
      expect(response.status).toBe(200);
      expect(rateLimitHeaders(response)).toEqual([]);
    }
    expect(seen.attempts).toEqual(
      Array.from({ length: 3 }, () => ({ spent: false, cost: 0, refundThrew: false })),
    );
    expect(await storedKeys()).toEqual([]);
    // A caller on no list is charged (and refunded by the handler) as usual.
    expect((await from('192.0.2.30', '/session', { method: 'POST' })).status).toBe(200);
    expect(seen.attempts[3]).toMatchObject({ spent: true, cost: 1 });
  });

  it('@Attempt: a denied caller gets 403 and the handler never runs', async () => {
    const denied = await from('203.0.113.30', '/session', { method: 'POST' });
    expect(denied.status).toBe(403);
    expect(rateLimitHeaders(denied)).toEqual([]);
    expect(seen.handled).toBe(0);
    expect(await storedKeys()).toEqual([]);
  });

  it('decision events say denied / skipped, one per policy the handler would charge, with no keys', async () => {
    await from('203.0.113.7'); // denied, @Throttle('two')
    await from('198.51.100.1', '/session', { method: 'POST' }); // skipped, @Attempt 'login'
    await from('203.0.113.7', '/session/both', { method: 'POST' }); // denied: 'two' and 'login'
    await from('192.0.2.1', '/items', { headers: { 'x-skip-async': 'yes' } }); // skipped
    const seenEvents = seen.events.map(({ operation, policy, outcome, latencyMs, keyHashes }) => ({
      operation,
      policy,
      outcome,
      latencyMs,
      keyHashes,
    }));
    const event = (policy: string, outcome: string) => ({
      operation: 'consume',
      policy,
      outcome,
      latencyMs: 0,
      keyHashes: [],
    });
    expect(seenEvents).toEqual([
      event('two', 'denied'),
      event('login', 'skipped'),
      event('two', 'denied'),
      event('login', 'denied'),
      event('two', 'skipped'),
    ]);
  });

  it('@SkipThrottle routes are not checked: the lists apply where redlimit limits', async () => {
    expect((await from('203.0.113.7', '/items/free')).status).toBe(200);
    expect(seen.events).toEqual([]);
  });

  it('X-Forwarded-For from a peer that is not a trusted proxy is not believed', async () => {
    await app.close();
    app = await startApp(allowDenyApp(client, prefix, seen, { trustLoopback: false }), platform);
    // Neither the allowed nor the denied address counts: the client is the peer, 127.0.0.1.
    const codes = [];
    for (const ip of ['198.51.100.1', '203.0.113.7', '198.51.100.1']) {
      codes.push((await from(ip)).status);
    }
    expect(codes).toEqual([200, 200, 429]);
  });
});

describe.each(PLATFORMS)(
  'allow and deny lists from options and the environment on %s',
  (platform) => {
    let client: Redis;
    beforeAll(() => {
      client = createTestClient();
    });
    afterAll(() => client.quit());

    it('forRootAsync + REDLIMIT_DENY_IPS: the loopback caller is denied', async () => {
      const prefix = uniquePrefix('e2e-allow-deny-env');
      const app = await startApp(
        envListsApp(client, prefix, { REDLIMIT_DENY_IPS: '10.0.0.0/8, 127.0.0.1' }),
        platform,
      );
      try {
        expect((await app.request('/items')).status).toBe(403);
      } finally {
        await app.close();
      }
    });

    it('forRootAsync + REDLIMIT_ALLOW_IPS=loopback: never charged', async () => {
      const prefix = uniquePrefix('e2e-allow-deny-env');
      const app = await startApp(
        envListsApp(client, prefix, { REDLIMIT_ALLOW_IPS: 'loopback' }),
        platform,
      );
      try {
        for (let i = 0; i < 3; i++) expect((await app.request('/items')).status).toBe(200);
        expect(await client.keys(`${prefix}*`)).toEqual([]);
      } finally {
        await app.close();
      }
    });

    it('a bad REDLIMIT_ALLOW_IPS stops the boot, naming the variable and the entry', async () => {
      const error = await startApp(
        envListsApp(client, uniquePrefix('e2e'), { REDLIMIT_ALLOW_IPS: '10.0.0.1,10.0.0.0/40' }),
        platform,
      ).then(
        (app) => app.close().then(() => new Error('booted')),
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(RedlimitConfigError);
      expect((error as Error).message).toBe(
        'REDLIMIT_ALLOW_IPS="10.0.0.1,10.0.0.0/40" is invalid: allow.ips: \'10.0.0.0/40\' is not ' +
          'an IP address, a CIDR range or one of loopback, private, linklocal',
      );
    });

    it.each([
      [{ deny: { ip: ['10.0.0.1'] } }, "RedlimitModule deny has unknown option 'ip'"],
      [{ allow: { ips: '10.0.0.1' } }, 'RedlimitModule allow.ips must be an array'],
      [
        { deny: { ips: ['10.0.0.300'] } },
        "RedlimitModule deny.ips: '10.0.0.300' is not an IP address",
      ],
      [{ skipIf: true }, 'RedlimitModule skipIf must be a function'],
      [{ allowList: {} }, "RedlimitModule has unknown option 'allowList'"],
    ])('bad options stop the boot with an error naming them: %j', async (options, message) => {
      const error = await startApp(optionsApp(options as never), platform).then(
        (app) => app.close().then(() => new Error('booted')),
        (e: unknown) => e,
      );
      expect((error as Error).message).toContain(message);
    });
  },
);
