/**
 * Second review of the ops board: attacks on the fixes of the first one (the recorder's bounded
 * pending lists, shortened keys, what an unlock accepts).
 *
 * Failing specs are holes (see each title); the others pin defences that held.
 */
import { DecisionEvents, Limiter, MemoryStore, type PolicyOptions } from '../../lib';
import { BoardApp, CSRF_COOKIE } from '../../lib/board/board-app';
import { key64 } from '../../lib/board/board-pages';
import {
  boardKey,
  BoardRecorder,
  isShortenedKey,
  MAX_PENDING_LOCKOUTS,
  MAX_PENDING_REFUSALS,
} from '../../lib/board/board-recorder';
import type { BoardRequest } from '../../lib/board/board-request';
import type { BoardBook, BoardWrite } from '../../lib/stores/board-book';

const CSRF = 'c'.repeat(43);

/** A book that keeps every write a recorder makes (nothing else is called by a recorder). */
function capturingBook(): { book: BoardBook; writes: BoardWrite[] } {
  const writes: BoardWrite[] = [];
  const book = {
    now: () => Date.now(),
    record: (write: BoardWrite) => {
      writes.push(write);
      return Promise.resolve();
    },
  } as unknown as BoardBook;
  return { book, writes };
}

function recorded(policies: readonly PolicyOptions[], clock?: () => number) {
  const store = new MemoryStore(clock ? { clock } : {});
  const events = new DecisionEvents();
  const limiters = policies.map((p) => new Limiter(store, p, { events }));
  const { book, writes } = capturingBook();
  const recorder = new BoardRecorder(events, book, { limiters: () => limiters, flushMs: 60_000 });
  recorder.start();
  return { store, limiters, recorder, writes };
}

function post(route: string, body: Record<string, string>): BoardRequest {
  return {
    method: 'POST',
    route,
    base: '/ops',
    query: {},
    headers: { cookie: `${CSRF_COOKIE}=${CSRF}`, 'sec-fetch-site': 'same-origin' },
    body: { csrf: CSRF, ...body },
    secure: false,
    actor: 'ada',
  };
}

const API: PolicyOptions = { name: 'api', algorithm: 'fixed-window', limit: 1, window: '1h' };
const LOGIN: PolicyOptions = {
  name: 'login',
  algorithm: 'fixed-window',
  limit: 1,
  window: '1h',
  block: { duration: '10m' },
};

/** Refuses `key` under `limiter` `times` times (its first consume takes the only unit). */
async function refuse(limiter: Limiter, key: string, times: number): Promise<void> {
  await limiter.consume(key);
  for (let i = 0; i < times; i++) await limiter.consume(key);
}

describe("the recorder's pending refused keys (MAX_PENDING_REFUSALS)", () => {
  it('lists a key refused 10 times when each of its refusals is followed by 500 one-off keys (a full list is written early; it never evicts a key refused often)', async () => {
    expect(MAX_PENDING_REFUSALS).toBe(1_000);
    const { limiters, recorder, writes } = recorded([API]);
    const [api] = limiters as [Limiter];
    await api.consume('victim');
    let flood = 0;
    // Fill the list once with one-off keys: from here on, every 500 new keys evict.
    for (; flood < MAX_PENDING_REFUSALS; flood++) await refuse(api, `f${flood}`, 1);
    for (let i = 0; i < 10; i++) {
      await api.consume('victim'); // refused
      for (let j = 0; j < MAX_PENDING_REFUSALS / 2; j++, flood++) {
        await refuse(api, `f${flood}`, 1);
      }
    }
    await recorder.flush();
    const rows = writes.flatMap((w) => w.refusals).filter((r) => r.key === 'victim');
    const refused = writes
      .flatMap((w) => w.counts)
      .filter((c) => c.outcome === 'refused')
      .reduce((sum, c) => sum + c.count, 0);
    expect(refused).toBe(flood + 10); // the rates count every refusal
    // 10 refusals of the victim against 1 of each flood key: a heavy hitter by any measure.
    expect(rows.reduce((sum, r) => sum + r.count, 0)).toBe(10);
  });

  it('sorts a full list once per 500 new keys, not per refusal: 20,000 one-off keys cost at most 40 sorts, of at most 1,000 entries each (defence holds)', async () => {
    const { limiters, recorder } = recorded([API]);
    const [api] = limiters as [Limiter];
    // Warm the limiter up before counting (its first calls may sort things of their own).
    await refuse(api, 'warm', 1);
    await recorder.flush();
    const sizes: number[] = [];
    const sort = Array.prototype.sort as (
      this: unknown[],
      compare?: (a: unknown, b: unknown) => number,
    ) => unknown[];
    const spy = jest.spyOn(Array.prototype, 'sort').mockImplementation(function (
      this: unknown[],
      compare?: (a: unknown, b: unknown) => number,
    ) {
      sizes.push(this.length);
      return sort.call(this, compare);
    });
    try {
      for (let i = 0; i < 20_000; i++) await refuse(api, `k${i}`, 1);
    } finally {
      spy.mockRestore();
    }
    await recorder.flush();
    const big = sizes.filter((n) => n >= MAX_PENDING_REFUSALS);
    expect(big.length).toBeLessThanOrEqual(40);
    expect(Math.max(0, ...sizes)).toBeLessThanOrEqual(MAX_PENDING_REFUSALS);
  });
});

describe("the recorder's pending lockouts (MAX_PENDING_LOCKOUTS)", () => {
  it('lists a victim’s lockout when, in the same flush, the attacker then locks out 1,000 keys of its own (their lockouts end later, and the half ending soonest goes)', async () => {
    expect(MAX_PENDING_LOCKOUTS).toBe(1_000);
    let now = 1_700_000_000_000;
    const { limiters, recorder, writes } = recorded([LOGIN], () => now);
    const [login] = limiters as [Limiter];
    // The attacker fails the victim's login until it is locked out, and is refused once by the
    // lockout (the sighting the board lists it by).
    await refuse(login, 'email:victim', 2);
    const victim = await login.peek('email:victim');
    expect(victim.blockedUntil).toBeDefined();
    // Then the same with 1,000 throwaway identities of its own, a millisecond later each.
    for (let i = 0; i < MAX_PENDING_LOCKOUTS; i++) {
      now++;
      await refuse(login, `email:throwaway${i}`, 2);
    }
    await recorder.flush();
    const listed = writes.flatMap((w) => w.lockouts).map((l) => l.key);
    expect(listed).toContain('email:throwaway999');
    expect(listed).toContain('email:victim');
  });
});

describe('shortened keys (boardKey / isShortenedKey)', () => {
  const long = `route|${'x'.repeat(600)}`;
  const shortened = boardKey(long);

  it('refuses an unlock of a shortened key (the board shows it without actions): it would reset another key, audit an unlock, and take the real lockout off Locked out', async () => {
    const store = new MemoryStore();
    const events = new DecisionEvents();
    const login = new Limiter(store, LOGIN, { events });
    const book = store.board();
    const recorder = new BoardRecorder(events, book, { limiters: () => [login], flushMs: 60_000 });
    recorder.start();
    await refuse(login, long, 2);
    await recorder.flush();
    expect((await book.lockouts(10)).map((l) => l.key)).toEqual([shortened]);
    const board = new BoardApp({ book, limiters: () => [login], via: 'board' });
    // A hand-made form (or a script on the page): the page offers no button, the server decides.
    const response = await board.handle(
      post('unlock', { policy: 'login', key64: key64(shortened) }),
    );
    expect(response.body).not.toContain('Unlocked login');
    // The real key is still locked out, so Locked out must still say so.
    expect((await login.peek(long)).blockedUntil).toBeDefined();
    expect((await book.lockouts(10)).map((l) => l.key)).toEqual([shortened]);
    expect((await book.audit(10)).filter((e) => e.action === 'unlock')).toEqual([]);
    await recorder.stop();
  });

  it('treats a short key a client chose to look shortened (245 characters with …# at 200) as shortened: kept under a digest of its own, shown without actions (defence holds)', async () => {
    // A key function over what the client sends (a header, a body field) can make such a key.
    const posing = `${'a'.repeat(200)}\u2026#${'b'.repeat(43)}`;
    expect(boardKey(posing)).not.toBe(posing);
    expect(isShortenedKey(boardKey(posing))).toBe(true);
    const store = new MemoryStore();
    const events = new DecisionEvents();
    const login = new Limiter(store, LOGIN, { events });
    await refuse(login, posing, 2);
    const board = new BoardApp({ book: store.board(), limiters: () => [login], via: 'board' });
    const page = await board.handle(post('key', { part: 'key64', value: key64(posing) }));
    expect(page.status).toBe(200);
    expect(page.body).toContain('locked out until');
    // No Unlock from the board, and a hand-made unlock form is refused.
    expect(page.body).not.toContain('action="/ops/unlock"');
    const unlock = await board.handle(post('unlock', { policy: 'login', key64: key64(posing) }));
    expect(unlock.body).toContain('This key was shortened for the board');
    expect((await login.peek(posing)).blockedUntil).toBeDefined();
  });

  it('does not let a short key a client chose collide with a long key’s shortened form (the two are counted and listed as one)', () => {
    // Whoever knows (or sees on the board) a long key's shortened form can send it as a key.
    expect(boardKey(shortened)).not.toBe(boardKey(long));
  });
});
