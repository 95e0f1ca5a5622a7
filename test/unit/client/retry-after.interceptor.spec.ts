import { Readable } from 'node:stream';
import {
  addRetryAfterInterceptor,
  type AxiosLikeInstance,
  type AxiosLikeRequestConfig,
  RetryBudgetExceededError,
} from '../../../lib/client';
import { fakeClock, refusal } from './fake-clock';

interface FakeResponse {
  status: number;
  headers: Record<string, string>;
  data?: unknown;
}

/**
 * Enough of axios to run response interceptors: request() dispatches, rejects non-2xx with an
 * AxiosError-shaped error ({ config, response }), and chains the registered interceptors; like
 * axios, it copies the config (string keys kept).
 */
function fakeAxios(...answers: FakeResponse[]) {
  const sent: AxiosLikeRequestConfig[] = [];
  const rejectedHandlers: ((error: unknown) => unknown)[] = [];
  const instance: AxiosLikeInstance = {
    interceptors: {
      response: {
        use: (_onFulfilled, onRejected) => rejectedHandlers.push(onRejected) - 1,
      },
    },
    request: (config) => {
      const copy = { ...config };
      sent.push(copy);
      const response = answers[sent.length - 1];
      let chain: Promise<unknown> =
        response === undefined
          ? Promise.reject(new Error('requested more often than scripted'))
          : response.status < 300
            ? Promise.resolve({ ...response, config: copy })
            : Promise.reject(
                Object.assign(new Error(`Request failed with status code ${response.status}`), {
                  isAxiosError: true,
                  config: copy,
                  response: { ...response, config: copy },
                }),
              );
      for (const onRejected of rejectedHandlers) chain = chain.then(undefined, onRejected);
      return chain;
    },
  };
  return { instance, sent };
}

const ok: FakeResponse = { status: 200, headers: {}, data: 'ok' };

describe('addRetryAfterInterceptor', () => {
  it('sends the request again after Retry-After and resolves with the answer', async () => {
    const clock = fakeClock();
    const { instance, sent } = fakeAxios(refusal(429, { 'retry-after': '1' }), refusal(503), ok);
    expect(addRetryAfterInterceptor(instance, { ...clock, random: () => 0.5 })).toBe(0);
    const res = await instance.request({ url: '/quotes/7', method: 'get' });
    expect(res).toMatchObject({ status: 200, data: 'ok' });
    expect(clock.waits).toEqual([1000, 200]); // Retry-After, then backoff: 0.5 · 200 · 2^1
    expect(sent.map((c) => c.url)).toEqual(['/quotes/7', '/quotes/7', '/quotes/7']);
  });

  it('rejects with RetryBudgetExceededError after maxAttempts, the AxiosError as cause', async () => {
    const clock = fakeClock();
    const { instance, sent } = fakeAxios(
      refusal(429, { 'retry-after': '1' }),
      refusal(429, { 'retry-after': '1' }),
      refusal(429, { 'retry-after': '1' }),
    );
    addRetryAfterInterceptor(instance, clock);
    const error = (await instance.request({ url: '/x' }).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(RetryBudgetExceededError);
    expect(error).toMatchObject({ reason: 'attempts', status: 429, attempts: 3 });
    expect((error.cause as { isAxiosError: boolean }).isAxiosError).toBe(true);
    expect(sent).toHaveLength(3);
    expect(clock.waits).toEqual([1000, 1000]);
  });

  it('gives up at once when Retry-After exceeds maxTotalMs', async () => {
    const clock = fakeClock();
    const { instance, sent } = fakeAxios(refusal(429, { 'retry-after': '120' }));
    addRetryAfterInterceptor(instance, { ...clock, maxTotalMs: 5000 });
    await expect(instance.request({ url: '/x' })).rejects.toMatchObject({
      reason: 'time',
      retryAfterMs: 120_000,
    });
    expect(sent).toHaveLength(1);
    expect(clock.waits).toEqual([]);
  });

  it('passes other errors through untouched', async () => {
    const clock = fakeClock();
    const { instance } = fakeAxios(refusal(404, { 'retry-after': '1' }));
    addRetryAfterInterceptor(instance, clock);
    await expect(instance.request({ url: '/x' })).rejects.toThrow(
      'Request failed with status code 404',
    );
    expect(clock.waits).toEqual([]);
  });

  it('does not send a stream body twice', async () => {
    const clock = fakeClock();
    const { instance, sent } = fakeAxios(refusal(429, { 'retry-after': '1' }));
    addRetryAfterInterceptor(instance, clock);
    await expect(
      instance.request({ url: '/upload', method: 'post', data: Readable.from(['x']) }),
    ).rejects.toMatchObject({ reason: 'unreplayable-body' });
    expect(sent).toHaveLength(1);
  });

  it("the request's signal aborts the wait", async () => {
    const controller = new AbortController();
    const { instance, sent } = fakeAxios(refusal(429, { 'retry-after': '20' }), ok);
    addRetryAfterInterceptor(instance);
    const pending = instance.request({ url: '/x', signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 10));
    controller.abort(new Error('cancelled'));
    await expect(pending).rejects.toThrow('cancelled');
    expect(sent).toHaveLength(1);
  });

  it('rejects something that is not an axios instance', () => {
    expect(() => addRetryAfterInterceptor({} as never)).toThrow(TypeError);
  });
});
