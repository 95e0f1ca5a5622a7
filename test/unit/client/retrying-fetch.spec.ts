import { type FetchFunction, RetryBudgetExceededError, retryingFetch } from '../../../lib/client';
import { fakeClock } from './fake-clock';

interface Sent {
  url: string;
  method: string;
  body: string;
}

/** A fetch that records what it was sent (reading the body) and answers from a script. */
function scriptedFetch(...answers: (() => Response)[]) {
  const sent: Sent[] = [];
  const fetch: FetchFunction = async (input, init) => {
    const request = new Request(input, init);
    sent.push({ url: request.url, method: request.method, body: await request.text() });
    const answer = answers[sent.length - 1];
    if (answer === undefined) throw new Error('fetched more often than scripted');
    return answer();
  };
  return { fetch, sent };
}

const tooMany = (retryAfter: string) => () =>
  new Response('slow down', { status: 429, headers: { 'Retry-After': retryAfter } });
/** A body that can be read once. */
const streamOf = (text: string) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(text));
      controller.close();
    },
  });
const ok = () => new Response('ok', { status: 200 });

describe('retryingFetch', () => {
  it('waits Retry-After, sends the same request again, and returns the answer', async () => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(tooMany('1'), tooMany('2'), ok);
    const res = await retryingFetch({ ...clock, fetch })('http://api.test/items', {
      method: 'POST',
      body: JSON.stringify({ n: 1 }),
    });
    expect(await res.text()).toBe('ok');
    expect(clock.waits).toEqual([1000, 2000]);
    expect(sent).toEqual(
      Array(3).fill({ url: 'http://api.test/items', method: 'POST', body: '{"n":1}' }),
    );
  });

  it('sends a Request with a body again (a clone each time)', async () => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(tooMany('1'), ok);
    const request = new Request('http://api.test/x', { method: 'PUT', body: 'payload' });
    await retryingFetch({ ...clock, fetch })(request);
    expect(sent.map((s) => s.body)).toEqual(['payload', 'payload']);
  });

  it.each([
    ['URLSearchParams', () => new URLSearchParams({ a: '1' }), 'a=1'],
    ['Blob', () => new Blob(['blob']), 'blob'],
    ['Uint8Array', () => new TextEncoder().encode('bytes'), 'bytes'],
  ])('sends a %s body again', async (_, body, text) => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(tooMany('1'), ok);
    await retryingFetch({ ...clock, fetch })('http://api.test/x', { method: 'POST', body: body() });
    expect(sent.map((s) => s.body)).toEqual([text, text]);
  });

  it('a stream body is sent once: a refusal throws reason unreplayable-body, without waiting', async () => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(tooMany('1'));
    const body = streamOf('chunk');
    const error = await retryingFetch({ ...clock, fetch })('http://api.test/upload', {
      method: 'POST',
      body,
      duplex: 'half',
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RetryBudgetExceededError);
    expect(error).toMatchObject({ reason: 'unreplayable-body', status: 429, attempts: 1 });
    expect((error as Error).message).toMatch(
      /request body is a stream, which cannot be sent again/,
    );
    expect(sent).toHaveLength(1);
    expect(clock.waits).toEqual([]);
  });

  it('a stream body that is accepted comes back as usual', async () => {
    const { fetch } = scriptedFetch(ok);
    const body = streamOf('chunk');
    const res = await retryingFetch({ ...fakeClock(), fetch })('http://api.test/upload', {
      method: 'POST',
      body,
      duplex: 'half',
    });
    expect(res.status).toBe(200);
  });

  it('gives up with the last Response, whose body can still be read', async () => {
    const clock = fakeClock();
    const { fetch } = scriptedFetch(tooMany('1'), tooMany('1'));
    const error = (await retryingFetch({ ...clock, fetch, maxAttempts: 2 })(
      'http://api.test/x',
    ).catch((e: unknown) => e)) as RetryBudgetExceededError<Response>;
    expect(error.reason).toBe('attempts');
    expect(await error.response.text()).toBe('slow down');
  });

  it("the request's own signal aborts a wait", async () => {
    const controller = new AbortController();
    const { fetch, sent } = scriptedFetch(tooMany('20'), ok);
    const pending = retryingFetch({ fetch })('http://api.test/x', { signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 10));
    controller.abort(new Error('client went away'));
    await expect(pending).rejects.toThrow('client went away');
    expect(sent).toHaveLength(1);
  });

  it('uses globalThis.fetch, looked up at call time, when no fetch is given', async () => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(tooMany('1'), ok);
    const original = globalThis.fetch;
    globalThis.fetch = fetch;
    try {
      const res = await retryingFetch(clock)('http://api.test/x');
      expect(res.status).toBe(200);
      expect(sent).toHaveLength(2);
    } finally {
      globalThis.fetch = original;
    }
  });

  it('rejects a fetch that is not a function, naming the option', () => {
    expect(() => retryingFetch({ fetch: 'nope' as never })).toThrow(
      new TypeError('fetch must be a function, got string'),
    );
  });
});
