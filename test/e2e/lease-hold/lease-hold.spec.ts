/**
 * Issue 26, finding 2: a client that hangs up must not free a `concurrency` lease while the
 * handler's work still runs. A lease is released when that work settles (the handler's promise
 * settles, its Observable completes or errors); an Observable torn down before that (the client
 * left) keeps its lease until the lease's window ends, since the work behind it (`from(promise)`)
 * may go on. Routes without a concurrency policy carry no interceptor for it.
 */
import http from 'node:http';
import type { Type } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { createTestClient, uniquePrefix, warmPool } from '../../support/redis';
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { leaseHoldApp, Work } from './lease-hold.app';

/** Nest's `INTERCEPTORS_METADATA`: the interceptors bound to a handler. */
const INTERCEPTORS = '__interceptors__';

/** A GET that the spec can hang up on: `status` resolves with the status, or never after abort. */
function open(url: string, path: string): { status: Promise<number>; hangUp(): void } {
  const request = http.get(`${url}${path}`);
  const status = new Promise<number>((resolve) => {
    request.on('response', (response) => {
      response.resume();
      resolve(response.statusCode!);
    });
  });
  request.on('error', () => undefined); // the hang-up
  return { status, hangUp: () => request.destroy() };
}

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(PLATFORMS)('concurrency leases and clients that hang up, on %s', (platform) => {
  let client: Redis;
  let app: RunningApp;
  let work: Work;
  let controller: Type;

  beforeAll(async () => {
    client = createTestClient();
    await warmPool(client);
  });
  afterAll(() => client.quit());
  beforeEach(async () => {
    work = new Work();
    const built = leaseHoldApp(client, uniquePrefix('e2e-lease-hold'), work);
    controller = built.controller;
    app = await startApp(built.module, platform);
  });
  afterEach(async () => {
    work.settleAll();
    await app.close();
  });

  /**
   * Ten requests, each hung up on once its handler started (or answered when refused); the
   * server sees every hang-up before the next request is sent.
   */
  async function hangUpTen(path: string): Promise<number[]> {
    const refused: number[] = [];
    for (let i = 0; i < 10; i++) {
      const entered = work.entered;
      const call = open(app.url, path);
      const first = await Promise.race([
        work.until((w) => w.entered > entered).then(() => 'entered' as const),
        call.status,
      ]);
      if (first === 'entered') {
        const closed = work.closed;
        call.hangUp();
        await work.until((w) => w.closed > closed);
        await tick(20); // what the server does on the hang-up reaches the store
      } else {
        refused.push(first);
      }
    }
    return refused;
  }

  /** Whether a request on `path` gets through within about ten seconds. */
  const freed = async (path: string) => {
    for (let tries = 0; tries < 100; tries++) {
      if ((await app.request(path)).status === 200) return true;
      await tick(100);
    }
    return false;
  };

  it('@Throttle at limit 2, ten clients hang up: two handlers in flight, eight refused; the leases come back when the handlers settle', async () => {
    const refused = await hangUpTen('/throttle/promise');
    expect(work.maxInFlight).toBe(2);
    expect(work.entered).toBe(2);
    expect(refused).toEqual(Array(8).fill(429));
    expect((await app.request('/throttle/quick')).status).toBe(429);
    work.settleAll();
    await work.until((w) => w.inFlight === 0);
    expect(await freed('/throttle/quick')).toBe(true);
  });

  it('@Throttle: a handler that fails after its client hung up frees the lease when it fails', async () => {
    await hangUpTen('/throttle/promise');
    expect(work.entered).toBe(2);
    work.settleAll(new Error('the work failed'));
    await work.until((w) => w.inFlight === 0);
    expect(await freed('/throttle/quick')).toBe(true);
  });

  it('@Throttle on a handler returning from(promise): a hang-up keeps the lease after Nest tears the Observable down, until the window ends', async () => {
    const refused = await hangUpTen('/throttle/observable');
    expect(work.maxInFlight).toBe(2);
    expect(refused).toEqual(Array(8).fill(429));
    // The Observable was torn down; the work behind it is not visible: the window bounds it.
    work.settleAll();
    await work.until((w) => w.inFlight === 0);
    expect((await app.request('/throttle/quick-short')).status).toBe(429);
    expect(await freed('/throttle/quick-short')).toBe(true); // the 3 s window ended
  });

  it('@Sse under @Throttle: a client that leaves the stream leaves the lease to its window', async () => {
    const call = open(app.url, '/throttle/sse');
    expect(await call.status).toBe(200);
    const closed = work.closed;
    call.hangUp();
    await work.until((w) => w.closed > closed);
    await tick(20);
    expect((await app.request('/throttle/quick-short')).status).toBe(200); // the other slot
    expect((await app.request('/throttle/quick-short')).status).toBe(200);
    const second = open(app.url, '/throttle/sse');
    try {
      expect(await second.status).toBe(200);
      expect((await app.request('/throttle/quick-short')).status).toBe(429);
    } finally {
      second.hangUp();
    }
    expect(await freed('/throttle/quick-short')).toBe(true); // the 3 s window ended
  });

  it('@Throttle on a handler returning an Observable that completes releases the lease when it completes', async () => {
    const first = app.request('/throttle/observable');
    const second = app.request('/throttle/observable');
    await work.until((w) => w.entered === 2);
    expect((await app.request('/throttle/quick-short')).status).toBe(429);
    work.settleAll();
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    expect((await app.request('/throttle/quick-short')).status).toBe(200);
  });

  it('@Attempt on a concurrency policy, async handler: hung-up clients hold their leases until the handler settles', async () => {
    const refused = await hangUpTen('/attempt/promise');
    expect(work.maxInFlight).toBe(2);
    expect(refused).toEqual(Array(8).fill(429));
    work.settleAll();
    await work.until((w) => w.inFlight === 0);
    expect(await freed('/attempt/quick')).toBe(true);
  });

  it('@Attempt on a concurrency policy, handler returning from(promise): a hang-up settles nothing; the lease lasts its window', async () => {
    const refused = await hangUpTen('/attempt/observable');
    expect(work.maxInFlight).toBe(2);
    expect(refused).toEqual(Array(8).fill(429));
    work.settleAll();
    await work.until((w) => w.inFlight === 0);
    expect((await app.request('/attempt/quick-short')).status).toBe(429);
    expect(await freed('/attempt/quick-short')).toBe(true);
  });

  it('a request that is not hung up on releases its lease once answered', async () => {
    const pending = app.request('/throttle/promise');
    await work.until((w) => w.entered === 1);
    work.settleAll();
    expect((await pending).status).toBe(200);
    const again = [app.request('/throttle/promise'), app.request('/throttle/promise')];
    await work.until((w) => w.entered === 3);
    work.settleAll();
    expect((await Promise.all(again)).map((r) => r.status)).toEqual([200, 200]);
  });

  describe("@Attempt refundOn: 'success' when the client hangs up (limit 2)", () => {
    /** Three rounds: a request, hung up on once its handler started, then its work ends. */
    async function rounds(path: string, error?: Error): Promise<Array<number | 'entered'>> {
      const seen: Array<number | 'entered'> = [];
      for (let i = 0; i < 3; i++) {
        const entered = work.entered;
        const call = open(app.url, path);
        const first = await Promise.race([
          work.until((w) => w.entered > entered).then(() => 'entered' as const),
          call.status,
        ]);
        seen.push(first);
        if (first !== 'entered') continue;
        const closed = work.closed;
        call.hangUp();
        await work.until((w) => w.closed > closed);
        work.settleAll(error);
        await work.until((w) => w.inFlight === 0);
        await tick(20); // the settlement reaches the store
      }
      return seen;
    }

    it('an async handler that succeeds after the hang-up is refunded: every round runs', async () => {
      expect(await rounds('/attempt/rate/promise')).toEqual(['entered', 'entered', 'entered']);
    });

    it('an async handler that fails after the hang-up keeps the cost', async () => {
      expect(await rounds('/attempt/rate/promise', new Error('wrong code'))).toEqual([
        'entered',
        'entered',
        429,
      ]);
    });

    it('from(promise) torn down by the hang-up keeps the cost, though its work went on to succeed', async () => {
      expect(await rounds('/attempt/rate/observable')).toEqual(['entered', 'entered', 429]);
    });
  });

  it('a request refused by a later guard (the handler is never reached) frees its lease once answered', async () => {
    for (let i = 0; i < 5; i++) expect((await app.request('/throttle/denied')).status).toBe(403);
    expect(work.entered).toBe(0);
    expect(await freed('/throttle/quick')).toBe(true);
    const both = [app.request('/throttle/promise'), app.request('/throttle/promise')];
    await work.until((w) => w.entered === 2);
    work.settleAll();
    expect((await Promise.all(both)).map((r) => r.status)).toEqual([200, 200]);
  });

  it('routes without a concurrency policy carry no lease interceptor (no per-request work)', () => {
    const bound = (name: string) =>
      (
        (Reflect.getMetadata(
          INTERCEPTORS,
          (controller.prototype as Record<string, object>)[name]!,
        ) ?? []) as object[]
      ).map((i) => i.constructor.name);
    expect(bound('rate')).toEqual([]);
    expect(bound('plain')).toEqual([]);
    expect(bound('promise')).toEqual(['LeaseReleaseInterceptor']);
    expect(bound('quick')).toEqual(['LeaseReleaseInterceptor']);
  });
});
