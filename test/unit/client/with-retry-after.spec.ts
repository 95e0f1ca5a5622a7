import {
  type ResponseLike,
  RetryBudgetExceededError,
  type RetryNotice,
  withRetryAfter,
} from '../../../lib/client';
import { fakeClock, refusal } from './fake-clock';

/** A call that answers from a script, one response (or thrown error) per attempt. */
function scripted(...answers: (ResponseLike | Error)[]) {
  const attempts: number[] = [];
  const call = (attempt: number): Promise<ResponseLike> => {
    attempts.push(attempt);
    const answer = answers[attempts.length - 1];
    if (answer === undefined) throw new Error('called more often than scripted');
    return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
  };
  return { call, attempts };
}

const ok = refusal(200);

describe('withRetryAfter', () => {
  it('waits Retry-After (delta-seconds) and returns the first response that is not refused', async () => {
    const clock = fakeClock();
    const { call, attempts } = scripted(refusal(429, { 'retry-after': '2' }), ok);
    await expect(withRetryAfter(call, clock)).resolves.toBe(ok);
    expect(clock.waits).toEqual([2000]);
    expect(attempts).toEqual([1, 2]);
  });

  it('waits until a Retry-After HTTP date', async () => {
    const clock = fakeClock(Date.parse('2025-03-01T12:00:00Z'));
    const { call } = scripted(refusal(503, { 'Retry-After': 'Sat, 01 Mar 2025 12:00:07 GMT' }), ok);
    await withRetryAfter(call, clock);
    expect(clock.waits).toEqual([7000]);
  });

  it("waits the RateLimit header's t when Retry-After is absent", async () => {
    const clock = fakeClock();
    const { call } = scripted(refusal(429, { ratelimit: '"api";r=0;t=3' }), ok);
    const notices: RetryNotice[] = [];
    await withRetryAfter(call, { ...clock, onRetry: (n) => notices.push(n) });
    expect(clock.waits).toEqual([3000]);
    expect(notices).toEqual([{ attempt: 1, status: 429, delayMs: 3000, source: 'ratelimit' }]);
  });

  it('backs off with full jitter, random in [0, min(maxDelayMs, baseDelayMs·2^n)], without a server hint', async () => {
    const clock = fakeClock();
    const draws = [0.5, 0.999, 0.25, 0.75];
    const { call } = scripted(refusal(503), refusal(503), refusal(429), refusal(503), ok);
    await withRetryAfter(call, {
      ...clock,
      maxAttempts: 5,
      baseDelayMs: 100,
      maxDelayMs: 300,
      random: () => draws.shift()!,
    });
    // caps: 100, 200, 300 (400 capped), 300 (800 capped)
    expect(clock.waits).toEqual([50, 199, 75, 225]);
  });

  it('gives up after maxAttempts with the last response, status and the wait asked for', async () => {
    const clock = fakeClock();
    const last = refusal(429, { 'retry-after': '1' });
    const { call, attempts } = scripted(refusal(429, { 'retry-after': '1' }), last);
    const error = await withRetryAfter(call, { ...clock, maxAttempts: 2 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RetryBudgetExceededError);
    expect(error).toMatchObject({
      reason: 'attempts',
      status: 429,
      attempts: 2,
      retryAfterMs: 1000,
      elapsedMs: 1000,
      response: last,
    });
    expect((error as Error).message).toBe(
      'Gave up after 2 attempts: the server answered 429 and asks to wait 1000 ms, and maxAttempts (2) is used up',
    );
    expect(attempts).toEqual([1, 2]);
    expect(clock.waits).toEqual([1000]); // no wait after the last attempt
  });

  it('gives up at once, without sleeping, when Retry-After is longer than what is left of maxTotalMs', async () => {
    const clock = fakeClock();
    const { call, attempts } = scripted(refusal(429, { 'retry-after': '60' }));
    const error = await withRetryAfter(call, { ...clock, maxTotalMs: 30_000 }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ reason: 'time', status: 429, attempts: 1, retryAfterMs: 60_000 });
    expect((error as Error).message).toBe(
      'Gave up after 1 attempt: the server answered 429 and asks to wait 60000 ms, more than the 30000 ms left of maxTotalMs (30000)',
    );
    expect(clock.waits).toEqual([]);
    expect(attempts).toEqual([1]);
  });

  it('counts time spent in earlier waits and in the calls themselves against maxTotalMs', async () => {
    const clock = fakeClock();
    const answers = [refusal(429, { 'retry-after': '2' }), refusal(429, { 'retry-after': '2' })];
    const call = (attempt: number) => {
      clock.advance(500); // each call takes 500 ms
      return Promise.resolve(answers[attempt - 1]!);
    };
    // 500 + 2000 + 500 = 3000 ms spent; 1000 left < 2000 asked
    const error = await withRetryAfter(call, { ...clock, maxTotalMs: 4000, maxAttempts: 5 }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ reason: 'time', attempts: 2, elapsedMs: 3000 });
    expect(clock.waits).toEqual([2000]);
  });

  it('keeps backoff inside the budget, and gives up once the budget is spent', async () => {
    const clock = fakeClock();
    const call = () => {
      clock.advance(400);
      return Promise.resolve(refusal(503));
    };
    const error = await withRetryAfter(call, {
      ...clock,
      maxAttempts: 10,
      maxTotalMs: 1000,
      baseDelayMs: 1000,
      random: () => 0.999_999,
    }).catch((e: unknown) => e);
    // left after each call: 600 → wait 599; then 1000 - 1399 < 0 → give up
    expect(clock.waits).toEqual([599]);
    expect(error).toMatchObject({ reason: 'time', attempts: 2, retryAfterMs: undefined });
  });

  it('returns other statuses as they are, without waiting', async () => {
    const clock = fakeClock();
    const notFound = refusal(404, { 'retry-after': '5' });
    await expect(withRetryAfter(scripted(notFound).call, clock)).resolves.toBe(notFound);
    expect(clock.waits).toEqual([]);
  });

  it('retries an error that carries a refused response (axios) and keeps it as the cause', async () => {
    const clock = fakeClock();
    const axiosError = (status: number) =>
      Object.assign(new Error(`Request failed with status code ${status}`), {
        isAxiosError: true,
        response: refusal(status, { 'retry-after': '1' }),
      });
    const first = scripted(axiosError(429), ok);
    await expect(withRetryAfter(first.call, clock)).resolves.toBe(ok);
    expect(clock.waits).toEqual([1000]);

    const last = axiosError(503);
    const error = await withRetryAfter(scripted(axiosError(503), last).call, {
      ...clock,
      maxAttempts: 2,
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ reason: 'attempts', status: 503, cause: last });
  });

  it('rethrows errors without a refused response (network errors, 404s) at once', async () => {
    const clock = fakeClock();
    const refusedConnection = new Error('ECONNREFUSED');
    await expect(withRetryAfter(scripted(refusedConnection).call, clock)).rejects.toBe(
      refusedConnection,
    );
    const notFound = Object.assign(new Error('404'), { response: refusal(404) });
    await expect(withRetryAfter(scripted(notFound).call, clock)).rejects.toBe(notFound);
    expect(clock.waits).toEqual([]);
  });

  it('retryOn chooses the statuses', async () => {
    const clock = fakeClock();
    const unavailable = refusal(503, { 'retry-after': '1' });
    await expect(
      withRetryAfter(scripted(unavailable).call, { ...clock, retryOn: [429] }),
    ).resolves.toBe(unavailable);
    const { call } = scripted(refusal(502, { 'retry-after': '1' }), ok);
    await expect(withRetryAfter(call, { ...clock, retryOn: [502] })).resolves.toBe(ok);
  });

  it('an abort during the wait rejects with the reason and makes no further attempt', async () => {
    const controller = new AbortController();
    const { call, attempts } = scripted(refusal(429, { 'retry-after': '20' }), ok);
    const pending = withRetryAfter(call, { signal: controller.signal }); // real timer sleep
    await new Promise((resolve) => setImmediate(resolve));
    controller.abort(new Error('shutting down'));
    await expect(pending).rejects.toThrow('shutting down');
    expect(attempts).toEqual([1]);
  });

  it('an already aborted signal makes no attempt', async () => {
    const { call, attempts } = scripted(ok);
    await expect(withRetryAfter(call, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(attempts).toEqual([]);
  });

  it('an abort is honoured after an injected sleep that ignores the signal', async () => {
    const controller = new AbortController();
    const { call, attempts } = scripted(refusal(429, { 'retry-after': '1' }), ok);
    const sleep = () => {
      controller.abort(new Error('gone'));
      return Promise.resolve();
    };
    await expect(withRetryAfter(call, { sleep, signal: controller.signal })).rejects.toThrow(
      'gone',
    );
    expect(attempts).toEqual([1]);
  });

  it.each([
    [{ maxAttempts: 0 }, RangeError, /maxAttempts must be a whole number ≥ 1, got 0/],
    [{ maxAttempts: 2.5 }, RangeError, /maxAttempts/],
    [{ maxTotalMs: -1 }, RangeError, /maxTotalMs must be a number of ms ≥ 0, got -1/],
    [{ baseDelayMs: 0 }, RangeError, /baseDelayMs must be a finite number of ms > 0/],
    [
      { baseDelayMs: 500, maxDelayMs: 100 },
      RangeError,
      /maxDelayMs must be .* ≥ baseDelayMs \(500\)/,
    ],
    [{ retryOn: 429 }, TypeError, /retryOn must be an array/],
    [{ retryOn: [429, 1000] }, RangeError, /retryOn must hold HTTP statuses \(100–599\), got 1000/],
    [{ sleep: 5 }, TypeError, /sleep must be a function, got number/],
  ])('rejects bad options %j with an error naming the option', (options, type, message) => {
    const call = () => Promise.resolve(ok);
    expect(() => withRetryAfter(call, options as never)).toThrow(type);
    expect(() => withRetryAfter(call, options as never)).toThrow(message);
  });
});
