import {
  type AuditEntry,
  type BoardBook,
  type BoardRefusal,
  type BoardWrite,
  MemoryStore,
  type PolicyCard,
  RedisStore,
} from '../../lib';
import { CARD_KEEP_MS, MAX_LOCKOUTS, MAX_REFUSED_KEYS } from '../../lib/stores/board-book';
import { clusterSlot } from '../../lib/stores/cluster-slot.util';
import { backends, TestClock } from '../support/backends';

// The ops board's book (lib/stores/board-book*.ts, lua/board/*.lua) on each store, on a test
// clock: what the recorders write is what the board reads back, summed per bucket, capped and
// ordered as the BoardBook interface says, and on Redis every key it writes expires and all of
// them share one Cluster slot.

const stores = backends('board-book');

const SECOND = 1_000;
const MINUTE = 60_000;

/** A write with only the given parts. */
function write(parts: Partial<BoardWrite>): BoardWrite {
  return { counts: [], refusals: [], lockouts: [], cards: [], ...parts };
}

/** A refusal of `policy` (kind `refused`) on a 5-per-minute limit unless told otherwise. */
function refusal(policy: string, key: string, count: number, more: Partial<BoardRefusal> = {}) {
  return { policy, kind: 'refused' as const, key, limit: 5, windowMs: MINUTE, count, ...more };
}

const loginCard: PolicyCard = {
  name: 'login',
  algorithm: 'fixed-window',
  limits: [{ limit: 5, windowMs: MINUTE }],
  block: {
    durationMs: MINUTE,
    factor: 2,
    maxMs: 4 * MINUTE,
    forgetAfterMs: 10 * MINUTE,
    restart: false,
  },
  shadow: false,
  failMode: 'closed',
};
const apiCard: PolicyCard = {
  name: 'api',
  algorithm: 'token-bucket',
  limits: [
    { limit: 100, windowMs: MINUTE },
    { limit: 1_000, windowMs: 3_600_000 },
  ],
  burst: 20,
  shadow: true,
  failMode: 'memory',
};

describe.each(stores)('$name store: the ops board book', (backend) => {
  let clock: TestClock;
  let store: RedisStore | MemoryStore;
  let book: BoardBook;
  beforeEach(() => {
    clock = new TestClock();
    store = backend.store(clock) as RedisStore | MemoryStore;
    book = store.board();
  });

  it('reads the clock it was given', () => {
    clock.advance(1_234.9);
    expect(book.now()).toBe(TestClock.BASE + 1_234);
  });

  describe('rates', () => {
    it('sums counts per policy and outcome in each 10 s bucket, read back from the bucket holding `since`', async () => {
      const t0 = clock.now;
      const first = [
        { at: t0, policy: 'api', outcome: 'failed', count: 1 },
        { at: t0, policy: 'api', outcome: 'shadow-refused', count: 5 },
        { at: t0, policy: 'login', outcome: 'allowed', count: 5 },
        { at: t0, policy: 'login', outcome: 'refused', count: 1 },
      ];
      const second = [
        { at: t0 + 10 * SECOND, policy: 'login', outcome: 'allowed', count: 7 },
        { at: t0 + 10 * SECOND, policy: 'login', outcome: 'blocked', count: 4 },
      ];
      await book.record(
        write({
          counts: [
            { policy: 'login', outcome: 'allowed', count: 3 },
            { policy: 'login', outcome: 'refused', count: 1 },
            { policy: 'api', outcome: 'shadow-refused', count: 5 },
          ],
        }),
      );
      clock.advance(9_999); // the bucket's last millisecond
      await book.record(
        write({
          counts: [
            { policy: 'login', outcome: 'allowed', count: 2 },
            { policy: 'api', outcome: 'failed', count: 1 },
          ],
        }),
      );
      clock.advance(1); // the next bucket
      await book.record(write({ counts: [{ policy: 'login', outcome: 'allowed', count: 7 }] }));
      await book.record(write({ counts: [{ policy: 'login', outcome: 'blocked', count: 4 }] }));
      expect(sortedRates(await book.rates(t0))).toEqual([...first, ...second]);
      clock.advance(25 * SECOND); // two buckets later, nothing written

      expect(sortedRates(await book.rates(t0))).toEqual([...first, ...second]);
      expect(sortedRates(await book.rates(t0 - 5 * MINUTE))).toEqual([...first, ...second]);
      // `since` in a bucket's last millisecond still reads that bucket; one later, not.
      expect(sortedRates(await book.rates(t0 + 9_999))).toEqual([...first, ...second]);
      expect(sortedRates(await book.rates(t0 + 10_000))).toEqual(second);
      expect(sortedRates(await book.rates(t0 + 19_999))).toEqual(second);
      expect(await book.rates(t0 + 20_000)).toEqual([]);
      // Oldest bucket first.
      const at = (await book.rates(t0)).map((row) => row.at);
      expect(at).toEqual([...at].sort((a, b) => a - b));
    });

    it('writes no bucket for a flush without counts', async () => {
      await book.record(write({ cards: [loginCard] }));
      expect(await book.rates(clock.now - MINUTE)).toEqual([]);
    });

    // A bucket of counts, like a minute of refusals, is read while it began less than 30 minutes
    // ago: the memory book forgets it then (the Redis book's keys live 30 minutes after their last
    // write, so what is read must not depend on whether the key is still there).
    it('reads a bucket until 30 minutes after it began, as it reads a minute of refusals', async () => {
      const t0 = clock.now;
      await book.record(write({ counts: [{ policy: 'login', outcome: 'allowed', count: 1 }] }));
      await book.record(write({ refusals: [refusal('login', 'ip:1', 1)] }));
      clock.advance(30 * MINUTE - 1);
      expect(await book.rates(t0)).toEqual([
        { at: t0, policy: 'login', outcome: 'allowed', count: 1 },
      ]);
      expect(await book.topRefusals('refused', ['login'], 30, 10)).toHaveLength(1);
      clock.advance(1);
      expect(await book.topRefusals('refused', ['login'], 30, 10)).toEqual([]);
      expect(await book.rates(t0)).toEqual([]);
      expect(await book.rates(0)).toEqual([]);
    });
  });

  describe('refusals', () => {
    it('sums refusals per key and limit within a minute, most first per policy, in the order of the policies asked for', async () => {
      await book.record(
        write({
          refusals: [
            refusal('login', 'ip:1', 3),
            refusal('login', 'ip:2', 1),
            refusal('login', 'ip:1', 4, { limit: 20, windowMs: 3_600_000 }), // another limit
            refusal('api', 'key:9', 7, { limit: 100, windowMs: SECOND }),
            refusal('login', 'ip:3', 6, { kind: 'shadow' }),
          ],
        }),
      );
      clock.advance(59 * SECOND); // the same minute
      await book.record(
        write({ refusals: [refusal('login', 'ip:1', 2), refusal('login', 'ip:2', 1)] }),
      );
      expect(await book.topRefusals('refused', ['login', 'api'], 1, 10)).toEqual([
        refusal('login', 'ip:1', 5),
        refusal('login', 'ip:1', 4, { limit: 20, windowMs: 3_600_000 }),
        refusal('login', 'ip:2', 2),
        refusal('api', 'key:9', 7, { limit: 100, windowMs: SECOND }),
      ]);
      expect(await book.topRefusals('refused', ['api', 'login'], 1, 2)).toEqual([
        refusal('api', 'key:9', 7, { limit: 100, windowMs: SECOND }),
        refusal('login', 'ip:1', 5),
        refusal('login', 'ip:1', 4, { limit: 20, windowMs: 3_600_000 }),
      ]);
      // Kinds are apart; a policy not asked for is not read.
      expect(await book.topRefusals('shadow', ['login', 'api'], 5, 10)).toEqual([
        refusal('login', 'ip:3', 6, { kind: 'shadow' }),
      ]);
      expect(await book.topRefusals('refused', ['api'], 5, 10)).toEqual([
        refusal('api', 'key:9', 7, { limit: 100, windowMs: SECOND }),
      ]);
      expect(await book.topRefusals('refused', [], 5, 10)).toEqual([]);
      expect(await book.topRefusals('refused', ['nobody'], 5, 10)).toEqual([]);
    });

    it('top 0 lists no key', async () => {
      await book.record(
        write({ refusals: [refusal('login', 'ip:1', 3), refusal('api', 'ip:1', 1)] }),
      );
      expect(await book.topRefusals('refused', ['login', 'api'], 5, 0)).toEqual([]);
    });

    it('sums over the last N minutes, the current one included, and keeps 30', async () => {
      await book.record(
        write({ refusals: [refusal('login', 'ip:1', 1), refusal('login', 'ip:2', 3)] }),
      );
      clock.advance(MINUTE); // the next minute
      await book.record(write({ refusals: [refusal('login', 'ip:1', 5)] }));
      clock.advance(4 * MINUTE + 59 * SECOND); // the last millisecond of the 6th minute
      await book.record(write({ refusals: [refusal('login', 'ip:3', 2)] }));
      expect(await book.topRefusals('refused', ['login'], 1, 10)).toEqual([
        refusal('login', 'ip:3', 2),
      ]);
      expect(await book.topRefusals('refused', ['login'], 5, 10)).toEqual([
        refusal('login', 'ip:1', 5),
        refusal('login', 'ip:3', 2),
      ]);
      expect(await book.topRefusals('refused', ['login'], 6, 10)).toEqual([
        refusal('login', 'ip:1', 6),
        refusal('login', 'ip:2', 3),
        refusal('login', 'ip:3', 2),
      ]);
      expect(await book.topRefusals('refused', ['login'], 6, 1)).toEqual([
        refusal('login', 'ip:1', 6),
      ]);
      // The first minute is read over 30 minutes until 30 minutes after it began.
      clock.advance(24 * MINUTE + SECOND - 1); // 1 ms before that
      expect(await book.topRefusals('refused', ['login'], 30, 10)).toEqual([
        refusal('login', 'ip:1', 6),
        refusal('login', 'ip:2', 3),
        refusal('login', 'ip:3', 2),
      ]);
      clock.advance(1);
      expect(await book.topRefusals('refused', ['login'], 30, 10)).toEqual([
        refusal('login', 'ip:1', 5),
        refusal('login', 'ip:3', 2),
      ]);
      // Asked for more than 30, still 30.
      expect(await book.topRefusals('refused', ['login'], 45, 10)).toEqual([
        refusal('login', 'ip:1', 5),
        refusal('login', 'ip:3', 2),
      ]);
    });

    it(`keeps the ${MAX_REFUSED_KEYS} keys refused most per policy, kind and minute`, async () => {
      const name = (i: number) => `ip:${String(i).padStart(4, '0')}`;
      // A minute's set full of keys refused once, ten of them twice.
      await book.record(
        write({
          refusals: Array.from({ length: MAX_REFUSED_KEYS }, (_, i) =>
            refusal('login', name(i), i % 100 === 50 ? 2 : 1),
          ),
        }),
      );
      // Then one refused often (its name sorts first, so a cap that dropped by name or from the
      // top would drop it), and a few more refused once: as many of those refused once go.
      await book.record(
        write({
          refusals: [
            refusal('login', 'hot', 50),
            ...Array.from({ length: 5 }, (_, i) => refusal('login', name(MAX_REFUSED_KEYS + i), 1)),
            refusal('login', 'other-kind', 1, { kind: 'shadow' }),
            refusal('api', 'other-policy', 1),
          ],
        }),
      );
      const rows = await book.topRefusals('refused', ['login'], 1, 2 * MAX_REFUSED_KEYS);
      expect(rows).toHaveLength(MAX_REFUSED_KEYS);
      expect(rows[0]).toEqual(refusal('login', 'hot', 50));
      expect(rows.slice(1, 11).map((row) => [row.key, row.count])).toEqual(
        Array.from({ length: 10 }, (_, i) => [name(950 - 100 * i), 2]),
      );
      expect(new Set(rows.map((row) => row.key)).size).toBe(MAX_REFUSED_KEYS);
      // The other sets keep theirs.
      expect(await book.topRefusals('shadow', ['login'], 1, 10)).toHaveLength(1);
      expect(await book.topRefusals('refused', ['api'], 1, 10)).toHaveLength(1);
      // The cap is per minute: the next minute's set is another one.
      clock.advance(MINUTE);
      await book.record(write({ refusals: [refusal('login', 'late', 1)] }));
      expect(await book.topRefusals('refused', ['login'], 2, 2 * MAX_REFUSED_KEYS)).toHaveLength(
        MAX_REFUSED_KEYS + 1,
      );
    });
  });

  describe('lockouts', () => {
    it('lists running lockouts soonest end first, at most `max`, with when they were first seen', async () => {
      const t0 = clock.now;
      await book.record(
        write({
          lockouts: [
            { policy: 'login', key: 'ip:1', until: t0 + MINUTE, since: t0 - SECOND },
            { policy: 'login', key: 'ip:2', until: t0 + 30 * SECOND, since: t0 },
            { policy: 'api', key: 'ip:1', until: t0 + 2 * MINUTE, since: t0 - 5 * SECOND },
            // Seen "later" than the store's clock: first seen now.
            { policy: 'api', key: 'ip:3', until: t0 + 3 * MINUTE, since: t0 + 5 * SECOND },
            // Already over: never listed.
            { policy: 'api', key: 'ip:4', until: t0, since: t0 - MINUTE },
          ],
        }),
      );
      const all = [
        { policy: 'login', key: 'ip:2', until: t0 + 30 * SECOND, since: t0 },
        { policy: 'login', key: 'ip:1', until: t0 + MINUTE, since: t0 - SECOND },
        { policy: 'api', key: 'ip:1', until: t0 + 2 * MINUTE, since: t0 - 5 * SECOND },
        { policy: 'api', key: 'ip:3', until: t0 + 3 * MINUTE, since: t0 },
      ];
      expect(await book.lockouts(10)).toEqual(all);
      expect(await book.lockouts(2)).toEqual(all.slice(0, 2));
    });

    it('an extended lockout keeps when it was first seen; a shorter report does not shorten it', async () => {
      const t0 = clock.now;
      await book.record(
        write({ lockouts: [{ policy: 'login', key: 'ip:1', until: t0 + MINUTE, since: t0 }] }),
      );
      clock.advance(20 * SECOND);
      await book.record(
        write({
          lockouts: [
            { policy: 'login', key: 'ip:1', until: t0 + 3 * MINUTE, since: clock.now },
            { policy: 'login', key: 'ip:2', until: t0 + 2 * MINUTE, since: clock.now },
          ],
        }),
      );
      clock.advance(20 * SECOND);
      await book.record(
        write({
          lockouts: [{ policy: 'login', key: 'ip:1', until: t0 + 2 * MINUTE, since: clock.now }],
        }),
      );
      expect(await book.lockouts(10)).toEqual([
        { policy: 'login', key: 'ip:2', until: t0 + 2 * MINUTE, since: t0 + 20 * SECOND },
        { policy: 'login', key: 'ip:1', until: t0 + 3 * MINUTE, since: t0 },
      ]);
    });

    it('a lockout that ended disappears; one that starts again is seen anew', async () => {
      const t0 = clock.now;
      await book.record(
        write({
          lockouts: [
            { policy: 'login', key: 'ip:1', until: t0 + MINUTE, since: t0 },
            { policy: 'login', key: 'ip:2', until: t0 + 5 * MINUTE, since: t0 },
          ],
        }),
      );
      clock.advance(MINUTE - 1);
      expect((await book.lockouts(10)).map((l) => l.key)).toEqual(['ip:1', 'ip:2']);
      clock.advance(1); // ip:1's end
      expect((await book.lockouts(10)).map((l) => l.key)).toEqual(['ip:2']);
      // Not even a write brings it back, nor shows it when it was listed before.
      await book.record(write({ counts: [{ policy: 'login', outcome: 'allowed', count: 1 }] }));
      expect((await book.lockouts(10)).map((l) => l.key)).toEqual(['ip:2']);
      clock.advance(SECOND);
      await book.record(
        write({
          lockouts: [{ policy: 'login', key: 'ip:1', until: clock.now + MINUTE, since: clock.now }],
        }),
      );
      expect(await book.lockouts(10)).toEqual([
        { policy: 'login', key: 'ip:1', until: clock.now + MINUTE, since: clock.now },
        { policy: 'login', key: 'ip:2', until: t0 + 5 * MINUTE, since: t0 },
      ]);
    });

    it("an unlock in the audit takes that policy's lockout of the key off the list, nothing else", async () => {
      const t0 = clock.now;
      await book.record(
        write({
          lockouts: [
            { policy: 'login', key: 'ip:1', until: t0 + MINUTE, since: t0 },
            { policy: 'api', key: 'ip:1', until: t0 + 2 * MINUTE, since: t0 },
            { policy: 'login', key: 'ip:2', until: t0 + 3 * MINUTE, since: t0 },
          ],
        }),
      );
      // Not an unlock, or an unlock without its key or policy: nothing taken off.
      await book.appendAudit({
        actor: 'ann',
        action: 'note',
        via: 'board',
        policy: 'login',
        key: 'ip:1',
      });
      await book.appendAudit({ actor: 'ann', action: 'unlock', via: 'board', policy: 'login' });
      await book.appendAudit({ actor: 'ann', action: 'unlock', via: 'board', key: 'ip:1' });
      expect(await book.lockouts(10)).toHaveLength(3);
      await book.appendAudit({
        actor: 'ann',
        action: 'unlock',
        via: 'board',
        policy: 'login',
        key: 'ip:1',
      });
      expect((await book.lockouts(10)).map((l) => [l.policy, l.key])).toEqual([
        ['api', 'ip:1'],
        ['login', 'ip:2'],
      ]);
      // A flush of what a recorder saw before the unlock does not list it again…
      const unlockedAt = clock.now;
      clock.advance(SECOND);
      await book.record(
        write({
          lockouts: [
            { policy: 'login', key: 'ip:1', until: t0 + MINUTE, since: t0, lastSeen: unlockedAt },
          ],
        }),
      );
      expect((await book.lockouts(10)).map((l) => [l.policy, l.key])).toEqual([
        ['api', 'ip:1'],
        ['login', 'ip:2'],
      ]);
      // …a recorder that saw the lockout refuse after the unlock lists it as a new one.
      await book.record(
        write({
          lockouts: [
            { policy: 'login', key: 'ip:1', until: t0 + MINUTE, since: t0, lastSeen: clock.now },
          ],
        }),
      );
      expect((await book.lockouts(1))[0]).toEqual({
        policy: 'login',
        key: 'ip:1',
        until: t0 + MINUTE,
        since: t0,
      });
    });
    it(`keeps the ${MAX_LOCKOUTS} lockouts ending latest`, async () => {
      const t0 = clock.now;
      const many = (from: number, count: number) =>
        Array.from({ length: count }, (_, i) => ({
          policy: 'login',
          key: `ip:${from + i}`,
          until: t0 + MINUTE + from + i,
          since: t0,
        }));
      await book.record(write({ lockouts: many(0, MAX_LOCKOUTS + 1) }));
      // The one ending soonest went, and only that one.
      expect((await book.lockouts(2)).map((l) => l.key)).toEqual(['ip:1', 'ip:2']);
      await book.record(write({ lockouts: many(MAX_LOCKOUTS + 1, 2) }));
      expect((await book.lockouts(2)).map((l) => l.key)).toEqual(['ip:3', 'ip:4']);
      clock.advance(MINUTE + MAX_LOCKOUTS);
      expect((await book.lockouts(10)).map((l) => l.key)).toEqual([
        `ip:${MAX_LOCKOUTS + 1}`,
        `ip:${MAX_LOCKOUTS + 2}`,
      ]);
    });

    // The board's summary reads lockouts(10_000) (lib/board/board-app.ts).
    it(`lists all ${MAX_LOCKOUTS} lockouts it keeps in one read (the board's summary asks for them all)`, async () => {
      const t0 = clock.now;
      await book.record(
        write({
          lockouts: Array.from({ length: MAX_LOCKOUTS }, (_, i) => ({
            policy: 'login',
            key: `ip:${i}`,
            until: t0 + MINUTE + i,
            since: t0,
          })),
        }),
      );
      const listed = await book.lockouts(MAX_LOCKOUTS);
      expect(listed).toHaveLength(MAX_LOCKOUTS);
      expect(listed[MAX_LOCKOUTS - 1]!.key).toBe(`ip:${MAX_LOCKOUTS - 1}`);
    });

    it('a lockout first seen at 0 on the store clock is listed as seen at 0', async () => {
      const early = new TestClock();
      early.now = 0;
      const at0 = backend.store(early) as RedisStore | MemoryStore;
      await at0
        .board()
        .record(write({ lockouts: [{ policy: 'login', key: 'ip:1', until: MINUTE, since: 0 }] }));
      expect(await at0.board().lockouts(10)).toEqual([
        { policy: 'login', key: 'ip:1', until: MINUTE, since: 0 },
      ]);
    });
  });

  describe('audit', () => {
    it('returns the latest entries newest first, with every field and the store clock as `at`', async () => {
      const given: Array<Omit<AuditEntry, 'at'>> = [
        {
          actor: 'ann',
          action: 'unlock',
          via: 'board',
          policy: 'login',
          key: 'ip:1',
          detail: 'by hand',
        },
        { actor: 'cli', action: 'unlock', via: 'cli', policy: 'api', key: 'key:9' },
        { actor: 'bob', action: 'note', via: 'board', detail: 'a, b = c\nd' },
        { actor: '', action: 'other', via: 'board', policy: '', key: '' },
      ];
      const stored: AuditEntry[] = [];
      for (const entry of given) {
        clock.advance(1_234);
        const returned = await book.appendAudit(entry);
        expect(returned).toEqual({ at: clock.now, ...entry });
        stored.push(returned);
      }
      expect(await book.audit(10)).toEqual([...stored].reverse());
      expect(await book.audit(2)).toEqual([stored[3], stored[2]]);
      expect(await book.audit(1)).toEqual([stored[3]]);
    });

    it('is empty before any entry; audit(0) lists none', async () => {
      expect(await book.audit(10)).toEqual([]);
      await book.appendAudit({ actor: 'ann', action: 'note', via: 'board' });
      expect(await book.audit(0)).toEqual([]);
    });
  });

  it('cards round-trip with when they were published; a policy published again replaces its card; one not published for 24 h is gone', async () => {
    const t0 = clock.now;
    await book.record(write({ cards: [loginCard, apiCard] }));
    expect(byName(await book.cards())).toEqual([
      { ...apiCard, publishedAt: t0 },
      { ...loginCard, publishedAt: t0 },
    ]);
    const changed: PolicyCard = {
      ...loginCard,
      limits: [{ limit: 3, windowMs: MINUTE }],
      shadow: true,
    };
    clock.advance(MINUTE);
    await book.record(write({ cards: [changed] }));
    expect(byName(await book.cards())).toEqual([
      { ...apiCard, publishedAt: t0 },
      { ...changed, publishedAt: t0 + MINUTE },
    ]);
    // 24 h after api was last published (login was published since): api is gone.
    clock.advance(CARD_KEEP_MS - MINUTE);
    await book.record(write({ cards: [changed] }));
    expect(byName(await book.cards())).toEqual([{ ...changed, publishedAt: clock.now }]);
  });

  if (backend.name !== 'memory') {
    it('every key it writes expires, and all are in one Cluster slot', async () => {
      const t0 = clock.now;
      await book.record(
        write({
          counts: [{ policy: 'login', outcome: 'refused', count: 2 }],
          refusals: [refusal('login', 'ip:1', 2), refusal('login', 'ip:1', 1, { kind: 'shadow' })],
          lockouts: [{ policy: 'login', key: 'ip:1', until: t0 + MINUTE, since: t0 }],
          cards: [loginCard],
        }),
      );
      await book.appendAudit({ actor: 'ann', action: 'note', via: 'board' });
      // Unlocks, and lockouts that end, leave the others expiring.
      await book.record(
        write({ lockouts: [{ policy: 'login', key: 'ip:2', until: t0 + 2 * MINUTE, since: t0 }] }),
      );
      await book.appendAudit({
        actor: 'ann',
        action: 'unlock',
        via: 'board',
        policy: 'login',
        key: 'ip:1',
      });
      clock.advance(MINUTE);
      await book.record(write({ refusals: [refusal('api', 'ip:3', 1)] }));
      // Reads write nothing that stays.
      await book.rates(t0);
      await book.topRefusals('refused', ['login', 'api'], 30, 10);
      await book.lockouts(10);
      await book.cards();
      await book.audit(10);

      const prefix = (store as RedisStore).prefix;
      const keys = (await backend.keys!(`${prefix}*`)).sort();
      const base = `${prefix}{board}:`;
      expect(keys.map((key) => key.slice(base.length))).toEqual(
        [
          `r:${t0}`,
          'locks',
          'lock-since',
          'policies',
          'audit',
          'unlocked',
          `x:refused:${t0}:login`,
          `x:shadow:${t0}:login`,
          `x:refused:${t0 + MINUTE}:api`,
        ].sort(),
      );
      for (const key of keys) {
        expect(key.startsWith(base)).toBe(true);
        const ttl = await backend.client!.pttl(key);
        expect({ key, expires: ttl > 0 }).toEqual({ key, expires: true });
      }
      expect(new Set(keys.map(clusterSlot)).size).toBe(1);
    });
  }
});

function sortedRates<T extends { at: number; policy: string; outcome: string }>(rows: T[]): T[] {
  return [...rows].sort(
    (a, b) => a.at - b.at || a.policy.localeCompare(b.policy) || a.outcome.localeCompare(b.outcome),
  );
}

function byName(cards: PolicyCard[]): PolicyCard[] {
  return [...cards].sort((a, b) => a.name.localeCompare(b.name));
}
