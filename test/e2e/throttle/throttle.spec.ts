import type { Redis } from 'ioredis';
import { TestClock } from '../../support/backends';
import { createTestClient, uniquePrefix, warmPool } from '../../support/redis';
import { count, PLATFORMS, type RunningApp, startApp, statuses } from '../support/app';
import { handled, throttleApp } from './throttle.app';

describe.each(PLATFORMS)('@Throttle + RedlimitGuard on %s', (platform) => {
  let client: Redis;
  let app: RunningApp;

  beforeAll(async () => {
    client = createTestClient();
    await warmPool(client);
  });
  afterAll(() => client.quit());
  beforeEach(async () => {
    app = await startApp(throttleApp(client, uniquePrefix('e2e-throttle')), platform);
  });
  afterEach(() => app.close());

  it('limit 2: 200, 200, then 429 with the exact Retry-After, the headers and a body naming the policy', async () => {
    // On a clock 123 ms into a minute: the third call fits again 89 877 ms later, once the
    // weighted count of the two spends has fallen to 1 in the next window. Rounded up: 90 s.
    await app.close();
    const clock = new TestClock();
    clock.advance(123);
    app = await startApp(
      throttleApp(client, uniquePrefix('e2e-throttle'), undefined, clock.read),
      platform,
    );
    const first = await app.request('/shared/a');
    expect(first.status).toBe(200);
    // The controller's 'two' stacks on the APP_GUARD's default 'three': both are listed.
    expect(first.headers.get('ratelimit-policy')).toBe('"three";q=3;w=60, "two";q=2;w=60');
    expect(first.headers.get('ratelimit')).toMatch(/^"three";r=2;t=\d+, "two";r=1;t=\d+$/);
    expect((await app.request('/shared/a')).status).toBe(200);

    const refused = await app.request('/shared/a');
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBe(90);
    expect(refused.headers.get('ratelimit')).toMatch(
      new RegExp(`^"three";r=1;t=\\d+, "two";r=0;t=${retryAfter}$`),
    );
    expect(await refused.json()).toMatchObject({
      statusCode: 429,
      policy: 'two',
      retryAfter,
    });
  });

  it('a cost function charges each call what its context asks; a bad one is a 400 that charges nothing', async () => {
    const units = (value: string) =>
      app.request('/global/units', { method: 'POST', headers: { 'x-units': value } });
    expect((await units('3')).status).toBe(201);
    for (const bad of ['0', '-1', '1.5', 'lots', '6']) {
      const refused = await units(bad);
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({
        message: "cost must be a whole number from 1 to the policy's smallest limit",
      });
    }
    const last = await units('2');
    expect(last.status).toBe(201);
    expect(last.headers.get('ratelimit')).toMatch(/^"five";r=0;t=\d+$/);
    expect((await units('1')).status).toBe(429);
  });

  it('one policy on the controller (cost 4) and the handler (cost 1) is one spend at the higher cost', async () => {
    const first = await app.request('/merged');
    expect(first.status).toBe(200);
    // One 'ten' spend of 4 (not 1, and not 4 + 1), stacked on the default 'three'.
    expect(first.headers.get('ratelimit')).toMatch(/^"three";r=2;t=\d+, "ten";r=6;t=\d+$/);
    expect((await app.request('/merged')).headers.get('ratelimit')).toMatch(/"ten";r=2;t=\d+$/);
    expect((await app.request('/merged')).status).toBe(429); // 8 of 10 spent: 4 more do not fit
  });

  it('endpoints sharing a policy keep separate budgets', async () => {
    expect(await statuses([app.request('/shared/a'), app.request('/shared/a')])).toEqual([
      200, 200,
    ]);
    expect((await app.request('/shared/b')).status).toBe(200);
    expect((await app.request('/shared/a')).status).toBe(429);
    expect((await app.request('/shared/b')).status).toBe(200);
    expect((await app.request('/shared/b')).status).toBe(429);
  });

  it('/items/1 and /items/2 share one budget: path parameters cannot mint fresh budgets', async () => {
    expect((await app.request('/shared/items/1')).status).toBe(200);
    expect((await app.request('/shared/items/2')).status).toBe(200);
    expect((await app.request('/shared/items/3')).status).toBe(429);
  });

  it('HEAD shares the budget of the GET route that serves it', async () => {
    expect((await app.request('/shared/a', { method: 'HEAD' })).status).toBe(200);
    expect((await app.request('/shared/a')).status).toBe(200);
    expect((await app.request('/shared/a', { method: 'HEAD' })).status).toBe(429);
    expect((await app.request('/shared/a')).status).toBe(429);
  });

  it('@All: cycling methods does not multiply the limit; one handler is one budget', async () => {
    handled.any = 0;
    const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'PROPFIND', 'SEARCH'];
    const codes: number[] = [];
    for (const method of [...methods, ...methods]) {
      codes.push((await app.request('/any', { method })).status);
    }
    expect(handled.any).toBe(2);
    // Fastify's @All does not route the WebDAV methods PROPFIND and SEARCH at all (404).
    const unrouted = platform === 'fastify' ? ['PROPFIND', 'SEARCH'] : [];
    const expected = [...methods, ...methods].map((method, i) =>
      unrouted.includes(method) ? 404 : i < 2 ? 200 : 429,
    );
    expect(codes).toEqual(expected);
  });

  it('two handlers on one path keep separate budgets', async () => {
    handled.read = handled.write = 0;
    for (let i = 0; i < 3; i++) {
      await app.request('/any/same');
      await app.request('/any/same', { method: 'POST' });
    }
    expect(handled).toMatchObject({ read: 2, write: 2 });
  });

  it("a handler's @Throttle with override replaces its controller's and the default", async () => {
    const codes = await statuses(Array.from({ length: 6 }, () => app.request('/shared/roomy')));
    expect(codes.sort()).toEqual([200, 200, 200, 200, 200, 429]);
  });

  it('layers stack: default, controller and handler policies decide as one; the tightest refuses', async () => {
    const codes = await statuses(Array.from({ length: 4 }, () => app.request('/shared/stacked')));
    expect(codes.sort()).toEqual([200, 200, 429, 429]);
    const refused = await app.request('/shared/stacked');
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ policy: 'two' }); // the refusing layer
    expect(refused.headers.get('ratelimit-policy')).toBe(
      '"three";q=3;w=60, "two";q=2;w=60, "five";q=5;w=60',
    );
    // Refusals spent nothing on the other layers: 'five' on this route still has 3 of 5.
    const five = await app.request('/shared/roomy'); // another route: its own budget
    expect(five.status).toBe(200);
  });

  it('a custom key function replaces the default key', async () => {
    const as = (key: string) => app.request('/keys/api-key', { headers: { 'x-api-key': key } });
    expect((await as('alice')).status).toBe(200);
    expect((await as('alice')).status).toBe(200);
    expect((await as('alice')).status).toBe(429);
    expect((await as('bob')).status).toBe(200); // same IP, other key: its own budget
  });

  it('a key function may return several keys, charged as one decision', async () => {
    const call = (tenant: string, key: string) =>
      app.request(`/keys/tenant/${tenant}`, { headers: { 'x-api-key': key } });
    expect((await call('acme', 'alice')).status).toBe(200);
    expect((await call('acme', 'bob')).status).toBe(200);
    // The tenant is spent out, whoever calls; bob's own key still has budget elsewhere.
    expect((await call('acme', 'carol')).status).toBe(429);
    expect((await call('globex', 'bob')).status).toBe(200);
    // bob has now spent 2: refused on another tenant too.
    expect((await call('initech', 'bob')).status).toBe(429);
  });

  it('40 concurrent requests at limit 5 → exactly five 200s', async () => {
    const codes = await statuses(
      Array.from({ length: 40 }, () => app.request('/global/burst', { method: 'POST' })),
    );
    expect(count(codes, 200) + count(codes, 201)).toBe(5);
    expect(count(codes, 429)).toBe(35);
  });

  it('a global guard applies defaultPolicy to routes without @Throttle', async () => {
    const codes = await statuses(Array.from({ length: 4 }, () => app.request('/global/default')));
    expect(codes.sort()).toEqual([200, 200, 200, 429]);
    expect((await app.request('/global/default')).headers.get('ratelimit-policy')).toBe(
      '"three";q=3;w=60',
    );
  });

  it('@SkipThrottle() opts a handler or a controller out; a handler @Throttle under a skipped controller still applies', async () => {
    const health = await statuses(Array.from({ length: 8 }, () => app.request('/global/health')));
    expect(health.every((s) => s === 200)).toBe(true);
    expect((await app.request('/global/health')).headers.get('ratelimit')).toBeNull();
    const skipped = await statuses(Array.from({ length: 8 }, () => app.request('/skipped')));
    expect(skipped.every((s) => s === 200)).toBe(true);
    const free = await statuses(Array.from({ length: 8 }, () => app.request('/shared/free')));
    expect(free.every((s) => s === 200)).toBe(true);
    const inner = await statuses(Array.from({ length: 3 }, () => app.request('/skipped/but-this')));
    expect(inner.sort()).toEqual([200, 200, 429]);
  });
});

describe.each(PLATFORMS)('rate-limit header styles on %s', (platform) => {
  let client: Redis;
  beforeAll(() => {
    client = createTestClient();
  });
  afterAll(() => client.quit());

  it.each([
    ['legacy', ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'], ['ratelimit']],
    ['both', ['x-ratelimit-limit', 'ratelimit', 'ratelimit-policy'], []],
    [false, [], ['ratelimit', 'ratelimit-policy', 'x-ratelimit-limit']],
  ] as const)('headers: %s', async (style, present, absent) => {
    const clock = new TestClock();
    clock.advance(123);
    const app = await startApp(
      throttleApp(client, uniquePrefix('e2e-headers'), style, clock.read),
      platform,
    );
    try {
      const ok = await app.request('/shared/a');
      for (const name of present) expect(ok.headers.get(name)).not.toBeNull();
      for (const name of absent) expect(ok.headers.get(name)).toBeNull();
      if (style !== false) {
        expect(ok.headers.get('x-ratelimit-limit')).toBe('2');
        expect(ok.headers.get('x-ratelimit-remaining')).toBe('1');
      }
      await app.request('/shared/a');
      const refused = await app.request('/shared/a');
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('90');
    } finally {
      await app.close();
    }
  });
});
