import type { Redis } from 'ioredis';
import { createTestClient, uniquePrefix, warmPool } from '../../support/redis';
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { gates, leasesApp } from './leases.app';

describe.each(PLATFORMS)('a concurrency policy under @Throttle on %s', (platform) => {
  let client: Redis;
  let app: RunningApp;
  let ids = 0;
  const id = () => `${platform}-${++ids}`;

  beforeAll(async () => {
    client = createTestClient();
    await warmPool(client);
  });
  afterAll(() => client.quit());
  beforeEach(async () => {
    app = await startApp(leasesApp(client, uniquePrefix('e2e-leases')), platform);
  });
  afterEach(() => app.close());

  /** The lease is free again: a quick request gets it (the release follows the response's close). */
  const freed = async () => {
    for (let tries = 0; tries < 200; tries++) {
      if ((await app.request('/work/quick')).status === 200) return true;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    return false;
  };

  it('holds the lease while the handler runs and releases it when the response is sent', async () => {
    const slow = id();
    const pending = app.request(`/work/slow/${slow}`);
    await gates.entered(slow);
    const busy = await app.request('/work/quick');
    expect(busy.status).toBe(429);
    expect(Number(busy.headers.get('retry-after'))).toBeLessThanOrEqual(30);
    gates.open(slow);
    expect((await pending).status).toBe(200);
    expect(await freed()).toBe(true);
  });

  it('a streaming response holds the lease until its last byte', async () => {
    const stream = id();
    const response = await app.request(`/work/stream/${stream}`);
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value as Uint8Array)).toBe('first;');
    expect((await app.request('/work/quick')).status).toBe(429);
    gates.open(stream);
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      rest += new TextDecoder().decode(chunk.value as Uint8Array);
    }
    expect(rest).toBe('last');
    expect(await freed()).toBe(true);
  });

  it('a client that goes away leaves the lease held while the handler still runs; it is freed when the handler ends', async () => {
    const slow = id();
    const abort = new AbortController();
    const pending = app
      .request(`/work/slow/${slow}`, { signal: abort.signal })
      .catch(() => 'aborted');
    await gates.entered(slow);
    expect((await app.request('/work/quick')).status).toBe(429);
    abort.abort();
    expect(await pending).toBe('aborted');
    // The handler still runs: its slot is still taken.
    for (let i = 0; i < 5; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect((await app.request('/work/quick')).status).toBe(429);
    }
    gates.open(slow); // the handler ends after its client left
    expect(await freed()).toBe(true);
  });

  it('a handler that throws frees the lease with its error response', async () => {
    const fail = id();
    const pending = app.request(`/work/fail/${fail}`);
    await gates.entered(fail);
    gates.open(fail);
    expect((await pending).status).toBe(500);
    expect(await freed()).toBe(true);
  });
});
