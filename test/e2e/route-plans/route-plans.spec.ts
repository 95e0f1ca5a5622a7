import * as metadata from '../../../lib/nest/throttle/redlimit.metadata';
import { LimiterRegistry, MemoryStore, RedlimitHttp } from '../../../lib/nest';
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { PatchedController, routePlansApp } from './route-plans.app';

describe.each(PLATFORMS)('route plans and request views on %s', (platform) => {
  let app: RunningApp;

  beforeEach(async () => {
    app = await startApp(routePlansApp(new MemoryStore()), platform);
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await app.close();
  });

  const get = (path: string, headers: Record<string, string> = {}) =>
    app.request(path, { headers });

  it("a guard subclass's getTracker and generateKeys decide the keys: one budget per x-user", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await get('/hooked', { 'x-user': 'ann' })).status);
    expect(statuses).toEqual([200, 200, 429]);
    expect((await get('/hooked', { 'x-user': 'bob' })).status).toBe(200);
    const two = app.app.get(LimiterRegistry).get('two');
    expect((await two.peek('hooked:two:ann')).allowed).toBe(false);
    expect((await two.peek('hooked:two:bob')).remaining).toBe(0); // peek: what one more would leave
  });

  it("a guard subclass's shouldSkip lets calls through uncharged and without headers", async () => {
    for (let i = 0; i < 4; i++) {
      const response = await get('/hooked', { 'x-user': 'cy', 'x-skip': 'yes' });
      expect(response.status).toBe(200);
      expect(response.headers.get('ratelimit-policy')).toBeNull();
    }
    expect((await get('/hooked', { 'x-user': 'cy' })).status).toBe(200);
  });

  it("a guard subclass's throttlesFor adds a layer per call, spent in the same decision", async () => {
    const first = await get('/hooked', { 'x-user': 'dee', 'x-extra': 'yes' });
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit-policy')).toBe('"two";q=2;w=60, "one";q=1;w=60');
    expect((await get('/hooked', { 'x-user': 'dee', 'x-extra': 'yes' })).status).toBe(429);
    // Refused by 'one': nothing was charged on 'two'.
    expect((await get('/hooked', { 'x-user': 'dee' })).status).toBe(200);
    expect((await get('/hooked', { 'x-user': 'dee' })).status).toBe(429);
  });

  it('reads no redlimit metadata on the request path once a handler has its plan', async () => {
    expect((await get('/both')).status).toBe(200); // compiles the plan
    expect((await get('/hooked')).status).toBe(200);
    const reads = jest.spyOn(metadata, 'readRedlimitMetadata');
    const reflected = jest.spyOn(Reflect, 'getMetadata');
    expect((await get('/both')).status).toBe(200);
    expect((await get('/hooked')).status).toBe(200);
    expect(reads).not.toHaveBeenCalled();
    const ours = reflected.mock.calls.filter(([key]) =>
      ['redlimit:metadata', '__routeArguments__', '__responsePassthrough__'].includes(String(key)),
    );
    expect(ours).toEqual([]);
  });

  it('computes the client IP once per request for the guard and the @Attempt interceptor', async () => {
    const clientIp = jest.spyOn(RedlimitHttp.prototype, 'clientIp');
    const response = await get('/both');
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('ok');
    expect(clientIp).toHaveBeenCalledTimes(1);
    // Both decisions are on the response: the guard's layer and the attempt's.
    expect(response.headers.get('ratelimit-policy')).toBe('"five";q=5;w=60, "five";q=5;w=60');
    await get('/both');
    expect(clientIp).toHaveBeenCalledTimes(2);
  });

  it('recompiles a plan when redlimit metadata is written after it was compiled', async () => {
    const handler = PatchedController.prototype.get;
    const before = Reflect.getOwnMetadata(
      'redlimit:metadata',
      handler,
    ) as metadata.RedlimitMetadata;
    expect((await get('/patched')).status).toBe(200);
    expect((await get('/patched')).status).toBe(429);
    try {
      metadata.defineRedlimitMetadata(handler, { throttle: false }); // as @SkipThrottle() would
      const skipped = await get('/patched');
      expect(skipped.status).toBe(200);
      expect(skipped.headers.get('ratelimit-policy')).toBeNull();
    } finally {
      metadata.defineRedlimitMetadata(handler, before);
    }
    expect((await get('/patched')).status).toBe(429);
  });
});
