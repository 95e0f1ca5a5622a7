import type { Redis } from 'ioredis';
import {
  type FetchFunction,
  RetryBudgetExceededError,
  retryingFetch,
  withRetryAfter,
} from '../../../lib/client';
import { createTestClient, uniquePrefix } from '../../support/redis';
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { clientApp } from './client.app';

/**
 * The window lives in real Redis time, so the clients really wait (≤ 1 s here); the specs check
 * the wait each client ASKED for against the Retry-After the server sent, never elapsed time.
 */
function recordingSleep() {
  const waits: number[] = [];
  const sleep = (ms: number): Promise<void> => {
    waits.push(ms);
    return new Promise((resolve) => setTimeout(resolve, ms));
  };
  return { waits, sleep };
}

/** Global fetch, noting the Retry-After of every 429 it sees. */
function observedFetch() {
  const retryAfters: string[] = [];
  const fetchAndNote: FetchFunction = async (input, init) => {
    const res = await fetch(input, init);
    if (res.status === 429) retryAfters.push(res.headers.get('retry-after') ?? 'missing');
    return res;
  };
  return { retryAfters, fetch: fetchAndNote };
}

describe.each(PLATFORMS)('clients that honour Retry-After, against @Throttle on %s', (platform) => {
  let client: Redis;
  let app: RunningApp;

  beforeAll(() => {
    client = createTestClient();
  });
  afterAll(() => client.quit());
  beforeEach(async () => {
    app = await startApp(clientApp(client, uniquePrefix('e2e-client')), platform);
  });
  afterEach(() => app.close());

  it('retryingFetch waits the Retry-After the endpoint sends, then gets through', async () => {
    const { waits, sleep } = recordingSleep();
    const observed = observedFetch();
    const get = retryingFetch({ fetch: observed.fetch, sleep, maxAttempts: 3 });
    const codes: number[] = [];
    // Limit 2 per window: within a few calls one is refused (whichever, if a window turns over).
    for (let i = 0; i < 6 && waits.length === 0; i++) {
      codes.push((await get(`${app.url}/quotes`)).status);
    }
    expect(codes.every((code) => code === 200)).toBe(true);
    expect(observed.retryAfters.length).toBeGreaterThanOrEqual(1);
    expect(observed.retryAfters[0]).toBe('1');
    expect(waits).toEqual(observed.retryAfters.map((seconds) => Number(seconds) * 1000));
  });

  it('gives up at once, without sleeping, when Retry-After is longer than maxTotalMs', async () => {
    const sleep = jest.fn(() => Promise.resolve());
    const get = retryingFetch({ sleep, maxTotalMs: 500 });
    let error: unknown;
    for (let i = 0; i < 6 && error === undefined; i++) {
      await get(`${app.url}/quotes`).catch((e: unknown) => (error = e));
    }
    expect(error).toBeInstanceOf(RetryBudgetExceededError);
    const refused = error as RetryBudgetExceededError<Response>;
    expect(refused).toMatchObject({ reason: 'time', status: 429, attempts: 1, retryAfterMs: 1000 });
    expect(refused.message).toMatch(
      /asks to wait 1000 ms, more than the \d+ ms left of maxTotalMs \(500\)/,
    );
    expect(refused.response.headers.get('retry-after')).toBe('1');
    expect(await refused.response.json()).toMatchObject({ statusCode: 429, policy: 'pair' });
    expect(sleep).not.toHaveBeenCalled();
  });

  it('withRetryAfter retries an axios-style call that throws on 429 and honours its Retry-After', async () => {
    const { waits, sleep } = recordingSleep();
    const retryAfters: string[] = [];
    // What firstValueFrom(httpService.get(url)) does: resolve on 2xx, throw { response } otherwise.
    const axiosStyleGet = async () => {
      const res = await fetch(`${app.url}/quotes`);
      const headers = Object.fromEntries(res.headers);
      if (res.status >= 400) {
        if (res.status === 429) retryAfters.push(headers['retry-after'] ?? 'missing');
        throw Object.assign(new Error(`Request failed with status code ${res.status}`), {
          response: { status: res.status, headers, data: await res.json() },
        });
      }
      return { status: res.status, headers, data: (await res.json()) as { quotes: string[] } };
    };
    const results: { quotes: string[] }[] = [];
    for (let i = 0; i < 6 && waits.length === 0; i++) {
      results.push((await withRetryAfter(axiosStyleGet, { sleep })).data);
    }
    expect(results.at(-1)).toEqual({ quotes: ['a', 'b'] });
    expect(retryAfters[0]).toBe('1');
    expect(waits).toEqual(retryAfters.map((seconds) => Number(seconds) * 1000));
  });
});
