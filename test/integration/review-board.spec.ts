/**
 * Attacks on the ops board's bookkeeping (the recorder, the board book on Redis, a Cluster and in
 * memory), below HTTP: what an anonymous client can make the board keep, hide from it, or make it
 * show wrongly, and what a hung Redis does to it.
 *
 * Failing specs are holes (see each title); the others pin defences that held.
 */
import { randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { DecisionEvents, Limiter, type PolicyOptions, RedisStore, type Store } from '../../lib';
import { BoardApp, CSRF_COOKIE } from '../../lib/board/board-app';
import { BoardRecorder, MAX_PENDING_REFUSALS } from '../../lib/board/board-recorder';
import type { BoardRequest } from '../../lib/board/board-request';
import type { BoardBook, PolicyCard } from '../../lib/stores/board-book';
import { backends, TestClock } from '../support/backends';
import { type FreezableRedis, startFreezableRedis } from '../support/freezable-redis';
import { uniquePrefix } from '../support/redis';

jest.setTimeout(60_000);

const stores = backends('review-board');
const redisStores = stores.filter((b) => b.name === 'redis' || b.name === 'cluster');

const CSRF = 'c'.repeat(43);

/** A limiter reporting to `events`, and a recorder of those events writing to the store's book. */
function recorded(store: Store, policies: readonly PolicyOptions[]) {
  const events = new DecisionEvents();
  const limiters = policies.map((p) => new Limiter(store, p, { events }));
  const book = (store as unknown as { board(): BoardBook }).board();
  // Flushed by the specs only (the timer's 60 s never comes): what a flush holds is theirs.
  const recorder = new BoardRecorder(events, book, { limiters: () => limiters, flushMs: 60_000 });
  recorder.start();
  const board = new BoardApp({ book, limiters: () => limiters, via: 'board' });
  return { limiters, book, recorder, board };
}

/** A board request (the adapters' work done: authorised, route below the board's path). */
function request(
  method: string,
  route: string,
  body?: Record<string, string>,
  query: Record<string, string> = {},
): BoardRequest {
  return {
    method,
    route,
    base: '/ops',
    query,
    headers: { cookie: `${CSRF_COOKIE}=${CSRF}`, 'sec-fetch-site': 'same-origin' },
    ...(body && { body: { csrf: CSRF, ...body } }),
    secure: false,
    actor: 'ada',
  };
}

/** Runs `work` over `items` with at most `width` calls in flight. */
async function inBatches<T>(
  items: readonly T[],
  width: number,
  work: (item: T) => Promise<unknown>,
) {
  for (let i = 0; i < items.length; i += width) {
    await Promise.all(items.slice(i, i + width).map(work));
  }
}

describe.each(redisStores)('$name store: caller keys the board keeps', (backend) => {
  it('keeps a refused or locked-out key bounded in size, as the limiter’s own state keys are (40 keys of 64 KiB, each refused)', async () => {
    // A route keyed by something the client sends (a custom @Throttle key function over a header
    // or a body field). The limiter stores such keys as a 44-character hash; the board must not
    // keep 64 KiB per key for 30 minutes (1,000 keys per policy and minute: gigabytes of Redis).
    const store = backend.store();
    const { limiters, recorder } = recorded(store, [
      { name: 'by-name', algorithm: 'fixed-window', limit: 1, window: '1m' },
      {
        name: 'login',
        algorithm: 'fixed-window',
        limit: 1,
        window: '1m',
        block: { duration: '10m' },
      },
    ]);
    const keys = Array.from({ length: 40 }, (_, i) => `name:${i}:${'x'.repeat(64 * 1024)}`);
    for (const limiter of limiters) {
      await inBatches(keys, 10, async (key) => {
        await limiter.consume(key);
        expect((await limiter.consume(key)).allowed).toBe(false);
      });
    }
    await recorder.stop();
    const prefix = (store as RedisStore).prefix;
    const boardKeys = await backend.keys!(`${prefix}{board}:*`);
    const client = backend.client as Redis | Cluster;
    let bytes = 0;
    for (const key of boardKeys) bytes += Number(await client.memory('USAGE', key));
    // 40 keys under two policies, lockouts included: a few KiB if each is kept bounded.
    expect(bytes).toBeLessThan(256 * 1024);
  });
});

describe.each(stores)('$name store: hiding from Refusing now', (backend) => {
  it(`lists a key refused 300 times even when ${MAX_PENDING_REFUSALS} other keys of another policy were refused once each before it, in the same flush`, async () => {
    const store = backend.store();
    const { limiters, recorder, book } = recorded(store, [
      { name: 'search', algorithm: 'fixed-window', limit: 1, window: '1m' },
      { name: 'login', algorithm: 'fixed-window', limit: 1, window: '15m' },
    ]);
    const [search, login] = limiters as [Limiter, Limiter];
    // A botnet (or one IPv6 /48) spends one request on each of 5,000 route keys of a cheap
    // route, then refuses each once more: the recorder's list of refused keys is full…
    const flood = Array.from(
      { length: MAX_PENDING_REFUSALS },
      (_, i) => `search|ip:2001:db8:${i.toString(16)}::/64`,
    );
    await inBatches(flood, 250, (key) => search.consume(key));
    await recorder.flush(); // the allowed spends: nothing listed yet
    await inBatches(flood, 250, (key) => search.consume(key));
    // …and only then does the credential stuffing start, on one victim's account.
    const victim = 'email:5f4dcc3b5aa765d6';
    await login.consume(victim);
    for (let i = 0; i < 300; i++) expect((await login.consume(victim)).allowed).toBe(false);
    await recorder.stop();
    // The docs: "the top of the list is exact". The key refused most of all must be listed.
    const rows = await book.topRefusals('refused', ['login'], 5, 10);
    expect(rows.map((r) => [r.key, r.count])).toEqual([[victim, 300]]);
  });
});

describe.each(stores)('$name store: an unlock from the board', (backend) => {
  it('takes the lockout off Locked out for good: a flush of what the recorder saw before the unlock does not list it again', async () => {
    const store = backend.store();
    const { limiters, recorder, book, board } = recorded(store, [
      {
        name: 'login',
        algorithm: 'fixed-window',
        limit: 1,
        window: '15m',
        block: { duration: '10m' },
      },
    ]);
    const [login] = limiters as [Limiter];
    const key = 'email:0123456789abcdef';
    await login.consume(key);
    expect((await login.consume(key)).blockedUntil).toBeDefined(); // locked out: 10 min
    await recorder.flush();
    expect((await book.lockouts(10)).map((l) => l.key)).toEqual([key]);
    // The attacker keeps trying while on-call looks: these refusals wait for the next flush.
    expect((await login.consume(key)).blockedUntil).toBeDefined();

    const unlocked = await board.handle(request('POST', 'unlock', { policy: 'login', key }));
    expect(unlocked.status).toBe(200);
    expect(unlocked.body).toContain('Unlocked login for this key');
    expect((await book.lockouts(10)).map((l) => l.key)).toEqual([]);
    expect((await login.peek(key)).allowed).toBe(true);

    await recorder.flush(); // the refusal from before the unlock
    // The docs: an unlock from the board "takes a lockout away at once". It is back, for the
    // rest of the 10 minutes the lockout would have lasted.
    expect((await book.lockouts(10)).map((l) => l.key)).toEqual([]);
    await recorder.stop();
  });
});

describe.each(stores)('$name store: policies the fleet published', (backend) => {
  const card = (name: string): PolicyCard => ({
    name,
    algorithm: 'fixed-window',
    limits: [{ limit: 5, windowMs: 60_000 }],
    shadow: false,
    failMode: 'open',
  });

  it('forgets a policy 24 h after an app last published it, while another app keeps publishing its own', async () => {
    const clock = new TestClock();
    const book = (backend.store(clock) as unknown as { board(): BoardBook }).board();
    const write = (cards: PolicyCard[]) =>
      book.record({ counts: [], refusals: [], lockouts: [], cards });
    await write([card('retired'), card('kept')]); // the old release, with policy `retired`
    clock.advance(23 * 3_600_000);
    await write([card('kept')]); // the new release no longer runs it
    clock.advance(2 * 3_600_000);
    await write([card('kept')]);
    // The docs: a policy removed from the fleet shows for 24 h after an app last published it.
    expect((await book.cards()).map((c) => c.name)).toEqual(['kept']);
  });
});

describe.each(redisStores)('$name store: a policy card in the store', (backend) => {
  it('is never markup whatever its fields hold (a card with a field of the wrong type is not shown)', async () => {
    // Cards are JSON an app wrote. A card whose failMode (or burst, or shadow…) is { html: … } is
    // no card: every field is checked when read, and only the board's own markup is markup.
    const store = backend.store();
    const prefix = (store as RedisStore).prefix;
    const client = backend.client as Redis | Cluster;
    const forged = {
      name: 'forged',
      algorithm: 'fixed-window',
      limits: [{ limit: 5, windowMs: 60_000 }],
      shadow: false,
      failMode: { html: '<a href="https://evil.example/login">Session expired: sign in</a>' },
    };
    await client.hset(`${prefix}{board}:policies`, 'forged', JSON.stringify(forged));
    await client.pexpire(`${prefix}{board}:policies`, 60_000);
    const board = new BoardApp({
      book: (store as RedisStore).board(),
      limiters: () => [],
      via: 'board',
    });
    const page = await board.handle(request('GET', ''));
    expect(page.status).toBe(200);
    expect(page.body).not.toContain('<strong>forged</strong>');
    expect(page.body).not.toContain('<a href="https://evil.example/login">');
    // The same card with fields of the right types is shown.
    await client.hset(
      `${prefix}{board}:policies`,
      'forged',
      JSON.stringify({ ...forged, failMode: '<a href="https://evil.example/">x</a>' }),
    );
    const shown = await board.handle(request('GET', ''));
    expect(shown.body).toContain('<strong>forged</strong>');
    expect(shown.body).not.toContain('<a href="https://evil.example/">');
  });
});

describe('a hung Redis (SIGSTOP: connected, never answers)', () => {
  /** Whether `work` settles within 10 s: a liveness bound (ten times the limiter's timeoutMs). */
  const settles = (work: Promise<unknown>) =>
    Promise.race([
      work.then(
        () => 'settled',
        () => 'settled',
      ),
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 10_000).unref()),
    ]);

  let redis: FreezableRedis;
  beforeEach(async () => {
    redis = await startFreezableRedis();
  });
  afterEach(() => redis.stop());

  function hungBoard() {
    const store = new RedisStore({ client: redis.client, prefix: uniquePrefix('board-hung') });
    return recorded(store, [{ name: 'search', algorithm: 'fixed-window', limit: 5, window: '1m' }]);
  }

  it('answers a page (a 503, as for a store that fails) while Redis does not answer', async () => {
    const { limiters, board, recorder } = hungBoard();
    await limiters[0]!.consume('ip:203.0.113.7');
    await recorder.flush();
    await redis.whileHung(async () => {
      // The limiter answers within its timeoutMs (fail mode open)…
      expect((await limiters[0]!.consume('ip:203.0.113.7')).failure?.reason).toBe('timeout');
      // …the board's reads have no bound: the page (and the refresh of every open board) hangs.
      expect(await settles(board.handle(request('GET', 'refusing')))).toBe('settled');
    });
  });

  it('stops its recorder while Redis does not answer (RedlimitBoard.onApplicationShutdown awaits it)', async () => {
    const { limiters, recorder } = hungBoard();
    await redis.whileHung(async () => {
      await limiters[0]!.consume('ip:203.0.113.7'); // counted, for the flush on stop
      // The write has no bound either: app.close() waits on it for as long as Redis hangs.
      expect(await settles(recorder.stop())).toBe('settled');
    });
  });
});

describe.each(stores)('$name store: counts the board shows (defences that held)', (backend) => {
  it('counts a stack’s refusal once, on the part that refused: the part that fitted is not counted, the shadow part is shadow-refused', async () => {
    const store = backend.store();
    const { limiters, recorder, book } = recorded(store, [
      { name: 'a', algorithm: 'fixed-window', limit: 2, window: '1m' },
      { name: 'b', algorithm: 'fixed-window', limit: 1, window: '1m' },
      { name: 'c', algorithm: 'fixed-window', limit: 1, window: '1m', shadow: true },
    ]);
    const [a, b, c] = limiters as [Limiter, Limiter, Limiter];
    const key = `ip:${randomBytes(2).toString('hex')}`;
    expect(
      (await Limiter.consumeAll([a, b, c].map((l) => ({ limiter: l, keys: key })))).allowed,
    ).toBe(true);
    // b refuses; a fitted and is left unspent (not counted); c (shadow) refuses with the stack.
    const refused = await Limiter.consumeAll([a, b, c].map((l) => ({ limiter: l, keys: key })));
    expect(refused.allowed).toBe(false);
    await recorder.stop();
    const rates = await book.rates(0);
    const sum = (policy: string, outcome: string) =>
      rates
        .filter((r) => r.policy === policy && r.outcome === outcome)
        .reduce((n, r) => n + r.count, 0);
    expect([sum('a', 'allowed'), sum('a', 'refused')]).toEqual([1, 0]);
    expect([sum('b', 'allowed'), sum('b', 'refused')]).toEqual([1, 1]);
    expect([sum('c', 'allowed'), sum('c', 'shadow-refused')]).toEqual([1, 1]);
  });
});

describe.each(stores)('$name store: the largest flushes (defences that held)', (backend) => {
  it('writes flushes of 5,000 refusals and 5,000 lockouts, trims lockouts past 10,000 (soonest ends first), reads 10,000 back, and every key it writes expires', async () => {
    const clock = new TestClock();
    const book = (backend.store(clock) as unknown as { board(): BoardBook }).board();
    const now = clock.now;
    for (let flush = 0; flush < 3; flush++) {
      const lockouts = Array.from({ length: 5_000 }, (_, i) => ({
        policy: 'login',
        key: `email:${flush}-${i}`,
        until: now + 60_000 * (flush + 1) + i,
        since: now,
      }));
      const refusals = Array.from({ length: 5_000 }, (_, i) => ({
        policy: 'login',
        kind: 'refused' as const,
        key: `ip:${flush}-${i}`,
        limit: 5,
        windowMs: 60_000,
        count: 1 + (i % 7),
      }));
      await book.record({ counts: [], refusals, lockouts, cards: [] });
    }
    const listed = await book.lockouts(10_000);
    expect(listed).toHaveLength(10_000);
    // The 5,000 ending soonest (the first flush's) were dropped.
    expect(listed.some((l) => l.key.startsWith('email:0-'))).toBe(false);
    expect(listed.every((l) => l.since === now)).toBe(true);
    const top = await book.topRefusals('refused', ['login'], 1, 1_000);
    expect(top).toHaveLength(1_000);
    expect(top[0]!.count).toBe(7);
    await book.appendAudit({
      actor: 'ada',
      action: 'unlock',
      via: 'board',
      policy: 'login',
      key: 'email:2-1',
    });
    await book.rates(0);
    if (backend.keys) {
      // Every key of the book expires (the look-up's scratch key is gone).
      const client = backend.client as Redis | Cluster;
      const prefix = (book as unknown as { base: string }).base;
      const keys = await backend.keys(`${prefix}:*`);
      expect(keys.length).toBeGreaterThan(0);
      expect(keys.some((k) => k.endsWith(':tmp'))).toBe(false);
      for (const key of keys) expect([key, (await client.pttl(key)) > 0]).toEqual([key, true]);
    }
  });
});
