import fc from 'fast-check';
import {
  type AuditEntry,
  type BoardBook,
  type BoardLockout,
  type BoardRefusal,
  type BoardWrite,
  MemoryStore,
  type PolicyCard,
  type RateCount,
  RedisStore,
  type RefusalKind,
} from '../../lib';
import {
  BOARD_KEEP_MS,
  BOARD_OUTCOMES,
  MAX_REFUSED_KEYS,
  RATE_BUCKET_MS,
} from '../../lib/stores/board-book';
import { backends, TestClock } from '../support/backends';

// The Redis book (lua/board/*.lua) against the memory book: the same writes, at the same clock
// readings, read back the same. Compared as data, not as representation: rates in any order
// within a bucket (a Redis hash has no order), cards in any order (idem). Where the two may
// legitimately order ties differently, the comparison ignores the order among ties (and, at a
// list's cut, which of the tied rows made it): lockouts ending at the same millisecond (Redis
// orders them by member, the memory book by insertion), and keys refused equally often in a top
// list (Redis orders them by their members' bytes, the memory book by UTF-16 code units, which
// differ for keys with characters past the BMP). Everything else must be equal.

const stores = backends('board-book-property').filter((b) => b.name !== 'memory');
const RUNS = Number(process.env.REDLIMIT_PROPERTY_RUNS ?? 20);

const MINUTE = 60_000;
const POLICIES = ['login', 'api', 'a:b|c'];
// ASCII, a character of the BMP past ASCII, one past the BMP and one that sorts before it in
// UTF-16 but after it in UTF-8.
const KEYS = ['ip:1', 'ip:2', 'user:ann', 'é', '\u{1F600}', '\uFF5A', ''];

type Step =
  | { op: 'advance'; ms: number }
  | { op: 'record'; write: BoardWrite }
  | { op: 'flood'; policy: string; size: number; seed: number }
  | { op: 'audit'; entry: Omit<AuditEntry, 'at'> };

const card = (name: string, limit: number): PolicyCard => ({
  name,
  algorithm: 'fixed-window',
  limits: [{ limit, windowMs: MINUTE }],
  shadow: limit % 2 === 0,
  failMode: 'open',
});

/** A write at `now` (lockouts' ends and first sightings are offsets from it, set when applied). */
const write: fc.Arbitrary<BoardWrite> = fc.record({
  counts: fc.array(
    fc.record({
      policy: fc.constantFrom(...POLICIES),
      outcome: fc.constantFrom(...BOARD_OUTCOMES),
      count: fc.integer({ min: 0, max: 50 }),
    }),
    { maxLength: 6 },
  ),
  refusals: fc.array(
    fc.record({
      policy: fc.constantFrom(...POLICIES),
      kind: fc.constantFrom<RefusalKind>('refused', 'shadow'),
      key: fc.constantFrom(...KEYS),
      limit: fc.constantFrom(0, 5, 100),
      windowMs: fc.constantFrom(0, MINUTE),
      count: fc.integer({ min: 1, max: 6 }),
    }),
    { maxLength: 8 },
  ),
  lockouts: fc.array(
    fc.record({
      policy: fc.constantFrom(...POLICIES),
      key: fc.constantFrom(...KEYS),
      // Offsets from now: some already over, some ending together (ties).
      until: fc.oneof(fc.integer({ min: -2_000, max: 200_000 }), fc.constantFrom(0, 30_000)),
      since: fc.integer({ min: -60_000, max: 5_000 }),
    }),
    { maxLength: 4 },
  ),
  cards: fc.array(
    fc
      .tuple(fc.constantFrom(...POLICIES), fc.integer({ min: 1, max: 4 }))
      .map(([n, l]) => card(n, l)),
    { maxLength: 2 },
  ),
});

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: write.map((w) => ({ op: 'record' as const, write: w })) },
  {
    weight: 4,
    arbitrary: fc
      .oneof(
        { weight: 4, arbitrary: fc.integer({ min: 0, max: 15_000 }) },
        { weight: 3, arbitrary: fc.integer({ min: 15_000, max: 3 * MINUTE }) },
        { weight: 1, arbitrary: fc.integer({ min: 3 * MINUTE, max: 32 * MINUTE }) },
      )
      .map((ms) => ({ op: 'advance' as const, ms })),
  },
  {
    weight: 2,
    arbitrary: fc
      .record({
        actor: fc.constantFrom('ann', 'cli', ''),
        action: fc.constantFrom('unlock', 'unlock', 'note'),
        via: fc.constantFrom('board', 'cli'),
        policy: fc.option(fc.constantFrom(...POLICIES), { nil: undefined }),
        key: fc.option(fc.constantFrom(...KEYS), { nil: undefined }),
        detail: fc.option(fc.string({ maxLength: 8 }), { nil: undefined }),
      })
      .map((entry) => ({ op: 'audit' as const, entry: withoutUndefined(entry) })),
  },
  // Past the cap of keys per set (rarely: a thousand members a time).
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('flood' as const),
      policy: fc.constantFrom(...POLICIES),
      size: fc.integer({ min: MAX_REFUSED_KEYS - 5, max: MAX_REFUSED_KEYS + 5 }),
      seed: fc.nat(),
    }),
  },
);

/** The write a step makes at `now`. */
function writeAt(s: Step, now: number): BoardWrite | undefined {
  if (s.op === 'record') {
    return {
      ...s.write,
      lockouts: s.write.lockouts.map((l) => ({ ...l, until: now + l.until, since: now + l.since })),
    };
  }
  if (s.op === 'flood') {
    // Counts 1 to 3 from the seed, on keys whose names sort in another order than their counts.
    return {
      counts: [],
      lockouts: [],
      cards: [],
      refusals: Array.from({ length: s.size }, (_, i) => ({
        policy: s.policy,
        kind: 'refused' as const,
        key: `f${String((i * 7_919) % 10_007).padStart(5, '0')}`,
        limit: 5,
        windowMs: MINUTE,
        count: 1 + ((s.seed + i * i) % 3),
      })),
    };
  }
  return undefined;
}

describe.each(stores)('$name: the Redis board book against the memory book', (backend) => {
  it('the same writes at the same clock readings read back the same', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), async (steps) => {
        const clock = new TestClock();
        clock.advance(12_345); // buckets and minutes not aligned with the first write
        const redis = (backend.store(clock) as RedisStore).board();
        const memory = new MemoryStore({ clock: clock.read }).board();
        for (const [i, s] of steps.entries()) {
          if (s.op === 'advance') clock.advance(s.ms);
          else if (s.op === 'audit') {
            const [a, b] = [await memory.appendAudit(s.entry), await redis.appendAudit(s.entry)];
            expect({ i, entry: b }).toEqual({ i, entry: a });
          } else {
            const w = writeAt(s, clock.now)!;
            await memory.record(w);
            await redis.record(w);
          }
          await expectSame(i, memory, redis, clock.now);
        }
      }),
      { numRuns: RUNS },
    );
  });
});

describe.each(stores)(
  '$name: the Redis board book against the memory book, at the edges',
  (backend) => {
    it('topRefusals over less than a minute reads the same on both books', async () => {
      const clock = new TestClock();
      const books = [
        (backend.store(clock) as RedisStore).board(),
        new MemoryStore({ clock: clock.read }).board(),
      ];
      const refused = {
        policy: 'login',
        kind: 'refused' as const,
        key: 'ip:1',
        limit: 5,
        windowMs: MINUTE,
        count: 2,
      };
      const read: Record<string, BoardRefusal[][]> = {};
      for (const book of books) {
        await book.record({ counts: [], refusals: [refused], lockouts: [], cards: [] });
        for (const minutes of [0, 0.5]) {
          (read[`over ${minutes} minutes`] ??= []).push(
            await book.topRefusals('refused', ['login'], minutes, 10),
          );
        }
      }
      for (const [what, [redis, memory]] of Object.entries(read)) {
        expect({ what, redis }).toEqual({ what, redis: memory });
      }
    });
  },
);

/** Reads both books the ways the board does (and some more) and compares them. */
async function expectSame(i: number, memory: BoardBook, redis: BoardBook, now: number) {
  const [a, b] = await Promise.all([readAll(memory, now), readAll(redis, now)]);
  expect({ i, now, ...b.exact }).toEqual({ i, now, ...a.exact });
  for (const [name, { top, rows }] of Object.entries(a.refusals)) {
    // Per policy: each one's list is cut at `top`.
    for (const policy of POLICIES) {
      const [ra, rb] = [rows, b.refusals[name]!.rows].map((r) =>
        r.filter((x) => x.policy === policy),
      );
      const what = `${i} ${name} ${policy}`;
      expectSameRanking(what, ra!, rb!, ra!.length >= top, refusalRank, refusalId);
    }
  }
  expectSameRanking(`${i} lockouts`, a.lockouts, b.lockouts, false, lockoutRank, lockoutId);
  for (const max of [1, 2]) {
    // A cut list: the head of the full one, but among ties at the cut any of them.
    const [cutA, cutB] = [await memory.lockouts(max), await redis.lockouts(max)];
    expectCut(`${i} lockouts(${max})`, cutA, a.lockouts, lockoutRank, lockoutId);
    expectCut(`${i} lockouts(${max})`, cutB, a.lockouts, lockoutRank, lockoutId);
  }
}

async function readAll(book: BoardBook, now: number) {
  const rates = async (since: number) => sortedRates(await book.rates(since));
  // Since at most 30 minutes back, less a bucket: see board-book.spec.ts for the oldest bucket.
  const oldest = now - BOARD_KEEP_MS + RATE_BUCKET_MS;
  const exact = {
    rates15: await rates(now - 15 * MINUTE),
    ratesOldest: await rates(oldest),
    ratesMid: await rates(now - 7 * MINUTE - 4_321),
    ratesNow: await rates(now),
    cards: [...(await book.cards())].sort((x, y) => (x.name < y.name ? -1 : 1)),
    audit: await book.audit(50),
    audit2: await book.audit(2),
  };
  const refusals: Record<string, { top: number; rows: BoardRefusal[] }> = {};
  const asked: Array<[number, number, readonly string[]]> = [
    [1, 3, POLICIES],
    [5, 1, POLICIES],
    [30, 3, POLICIES],
    [30, 2 * MAX_REFUSED_KEYS, POLICIES],
    [2, 2, ['api']],
  ];
  for (const kind of ['refused', 'shadow'] as const) {
    for (const [minutes, top, policies] of asked) {
      const rows = await book.topRefusals(kind, policies, minutes, top);
      refusals[`${kind} ${minutes} ${top} ${policies.join()}`] = { top, rows };
    }
  }
  return { exact, refusals, lockouts: await book.lockouts(100) };
}

const refusalRank = (r: BoardRefusal) => `${r.policy}\n${String(r.count).padStart(9, '0')}`;
const refusalId = (r: BoardRefusal) => JSON.stringify(r);
const lockoutRank = (l: BoardLockout) => String(l.until);
const lockoutId = (l: BoardLockout) => JSON.stringify(l);

/**
 * The same rows in the same order, except that rows of the same rank (a policy's keys refused
 * equally often, lockouts ending together) may come in any order, and where the list was cut
 * (`cut`: it is as long as asked for) among rows of the rank of its last row, any of those may
 * have made it.
 */
function expectSameRanking<T>(
  what: string,
  a: T[],
  b: T[],
  cut: boolean,
  rank: (row: T) => string,
  id: (row: T) => string,
): void {
  expect({ what, ranks: b.map(rank) }).toEqual({ what, ranks: a.map(rank) });
  const last = a.length > 0 ? rank(a[a.length - 1]!) : undefined;
  const group = (rows: T[], r: string) =>
    rows
      .filter((row) => rank(row) === r)
      .map(id)
      .sort();
  for (const r of new Set(a.map(rank))) {
    if (cut && r === last) continue;
    expect({ what, rank: r, rows: group(b, r) }).toEqual({ what, rank: r, rows: group(a, r) });
  }
}

/** `cut` is the head of `full`, up to the order and choice among rows of the same rank. */
function expectCut<T>(
  what: string,
  cut: T[],
  full: T[],
  rank: (row: T) => string,
  id: (row: T) => string,
): void {
  expect({ what, ranks: cut.map(rank) }).toEqual({
    what,
    ranks: full.slice(0, cut.length).map(rank),
  });
  const ids = new Set(full.map(id));
  for (const row of cut) expect({ what, listed: ids.has(id(row)) }).toEqual({ what, listed: true });
}

function sortedRates(rows: RateCount[]): RateCount[] {
  return [...rows].sort(
    (x, y) =>
      x.at - y.at ||
      (x.policy < y.policy ? -1 : x.policy > y.policy ? 1 : 0) ||
      (x.outcome < y.outcome ? -1 : x.outcome > y.outcome ? 1 : 0),
  );
}

function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
