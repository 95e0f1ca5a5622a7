/**
 * Second review of the ops board on a real Redis: the recorder against the refusal cache, and
 * the unlock memory (`<prefix>{board}:unlocked`) against a store clock that is not Redis TIME.
 *
 * Failing specs are holes (see each title); the others pin defences that held.
 */
import type { Redis } from 'ioredis';
import { DecisionEvents, Limiter, type PolicyOptions, RedisStore } from '../../lib';
import { BoardApp, CSRF_COOKIE } from '../../lib/board/board-app';
import { BoardRecorder } from '../../lib/board/board-recorder';
import type { BoardRequest } from '../../lib/board/board-request';
import type { BoardBook, BoardWrite } from '../../lib/stores/board-book';
import { createTestClient, uniquePrefix } from '../support/redis';

jest.setTimeout(60_000);

const CSRF = 'c'.repeat(43);

const LOGIN: PolicyOptions = {
  name: 'login',
  algorithm: 'fixed-window',
  limit: 1,
  window: '15m',
  block: { duration: '10m' },
};

function unlock(key: string): BoardRequest {
  return {
    method: 'POST',
    route: 'unlock',
    base: '/ops',
    query: {},
    headers: { cookie: `${CSRF_COOKIE}=${CSRF}`, 'sec-fetch-site': 'same-origin' },
    body: { csrf: CSRF, policy: 'login', key },
    secure: false,
    actor: 'ada',
  };
}

let client: Redis;

beforeAll(() => {
  client = createTestClient();
});

afterAll(() => {
  client.disconnect();
});

function store(prefix: string, extra: Partial<ConstructorParameters<typeof RedisStore>[0]> = {}) {
  return new RedisStore({ client, prefix, ...extra });
}

describe('the recorder × the refusal cache (RedisStore({ refusalCache: true }))', () => {
  it('counts and lists refusals the cache answered, and the lockout they refuse by (defence holds)', async () => {
    const redis = store(uniquePrefix('rb2-cache'), { refusalCache: true });
    const events = new DecisionEvents();
    const login = new Limiter(redis, LOGIN, { events });
    const writes: BoardWrite[] = [];
    const book = redis.board();
    // The store's book, its writes kept for the spec.
    const watched = Object.create(book) as BoardBook;
    watched.record = (w: BoardWrite) => {
      writes.push(w);
      return book.record(w);
    };
    const recorder = new BoardRecorder(events, watched, {
      limiters: () => [login],
      flushMs: 60_000,
    });
    recorder.start();
    await login.consume('email:victim');
    const decisions = [];
    for (let i = 0; i < 5; i++) decisions.push(await login.consume('email:victim'));
    expect(decisions.some((d) => d.cached === true)).toBe(true);
    await recorder.flush();
    const counts = writes.flatMap((w) => w.counts);
    const refusedOrBlocked = counts
      .filter((c) => c.outcome === 'refused' || c.outcome === 'blocked')
      .reduce((sum, c) => sum + c.count, 0);
    expect(refusedOrBlocked).toBe(5);
    expect((await book.lockouts(10)).map((l) => l.key)).toEqual(['email:victim']);
    await recorder.stop();
  });
});

describe('the unlock memory × a store clock that is not Redis TIME', () => {
  // Known gap (docs/board.md, "Where the figures come from"): the board reads lockouts on its own
  // store's clock; apps whose RedisStore runs a custom clock far from Redis TIME write ends on
  // theirs. Flip to `it` once the board follows the apps' clock.
  it.failing(
    '`redlimit board` (Redis TIME, no clock option) lists the lockouts of apps that run RedisStore({ clock }) an hour behind Redis, and a new one after its unlock',
    async () => {
      // The apps keep time with a custom clock (RedisStore's `clock` option, e.g. () => Date.now()
      // on hosts whose clocks agree with each other, not with Redis). `redlimit board` has no clock
      // option: its unlocks are stamped with Redis TIME.
      const prefix = uniquePrefix('rb2-clock');
      const [seconds, micros] = (await client.time()).map(Number) as [number, number];
      let appNow = seconds * 1000 + Math.floor(micros / 1000) - 3_600_000;
      const app = store(prefix, { clock: () => appNow });
      const events = new DecisionEvents();
      const login = new Limiter(app, LOGIN, { events });
      const recorder = new BoardRecorder(events, app.board(), {
        limiters: () => [login],
        flushMs: 60_000,
      });
      recorder.start();
      // The CLI board's store: same Redis and prefix, Redis TIME.
      const cli = store(prefix);
      const cliLogin = new Limiter(cli, LOGIN);
      const board = new BoardApp({ book: cli.board(), limiters: () => [cliLogin], via: 'cli:ada' });

      const key = 'email:victim';
      await login.consume(key);
      expect((await login.consume(key)).blockedUntil).toBeDefined();
      await recorder.flush();
      // Fails here: the lockout ends (by the app's clock) an hour before Redis TIME, so the CLI's
      // read takes it as over; its unlock memory (Redis TIME) would then also outlast every
      // lastSeen the apps send for the next hour, hiding new lockouts for its 10 minutes.
      expect((await cli.board().lockouts(10)).map((l) => l.key)).toEqual([key]);

      expect((await board.handle(unlock(key))).body).toContain('Unlocked login for this key');
      expect((await cli.board().lockouts(10)).map((l) => l.key)).toEqual([]);

      // A minute later the attacker locks the victim out again: a new lockout, refusing.
      appNow += 60_000;
      await login.consume(key);
      await login.consume(key);
      expect((await login.consume(key)).blockedUntil).toBeDefined();
      expect((await login.peek(key)).blockedUntil).toBeDefined();
      await recorder.flush();
      expect((await cli.board().lockouts(10)).map((l) => l.key)).toEqual([key]);
      await recorder.stop();
    },
  );
});
