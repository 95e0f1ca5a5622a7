// Review of failMode 'memory' for a fleet (lib/stores/fleet.ts, fleet-fallback.ts, redis-fleet.ts):
// call sequences an attacker (or the infrastructure) can produce that get more than the limit
// through, or charge a fallback spend twice. Each store stands for one process, with its own
// connection through a proxy that can cut it (an outage), as in fleet-fallback.spec.ts.
import type { Algorithm } from '../../lib/core/policy';
import { FleetFallback, MAX_FALLBACK_ENTRIES } from '../../lib/stores/fleet-fallback';
import { TestClock } from '../support/backends';
import { answers, fleetHarness } from '../support/fleet-harness';
import { until } from '../support/until';

const BEAT_MS = 100;
/** How long a process stays in the fleet after its latest beat, here (default: 10 minutes). */
const TTL_MS = 2_000;

describe("review: failMode 'memory' across a fleet", () => {
  const { open, proxy, processStore, limiter, established, allowedOf, cut } = fleetHarness({
    beatMs: BEAT_MS,
    ttlMs: TTL_MS,
  });

  // Attack: a partial outage, then a full one. A's connection fails first (its beats fail; it
  // keeps its last view, fleet of 2, and its share 5). B still reaches Redis and beats on; A's
  // announcement lapses there, so B now sees a fleet of 1 (share 10). Then B's connection fails
  // too. A's stale view does not count itself out, B's no longer counts A: 5 + 10 of a limit of 10.
  // (A view must not outlive this process's announcement: past it, others may no longer count it.)
  it('a process whose beats failed long enough to lapse from the fleet still takes its old share', async () => {
    const prefix = `review:stale:${Math.random()}:`;
    const clock = new TestClock();
    const [pa, pb] = [await proxy(), await proxy()];
    const a = processStore(pa, prefix, clock);
    const b = processStore(pb, prefix, clock);
    const policy = { algorithm: 'fixed-window', limit: 10, window: '1h' };
    const [la, lb] = [limiter(a, policy), limiter(b, policy)];
    await established([a, b]);
    await cut(pa, [a]);
    // B beats on until A's announcement (fleetTtlMs after its latest beat) has lapsed in Redis.
    await until(async () => (await answers(b)) && b.fleet.view?.size === 1);
    expect(b.fleet.view?.established).toBe(true);
    await cut(pb, [b]);
    const allowed = (await allowedOf(la, 'victim', 20)) + (await allowedOf(lb, 'victim', 20));
    expect(allowed).toBeLessThanOrEqual(10);
  });

  // Attack: wait out the bucket's refill between the outage's spends and the recovery. Each
  // fallback spend is charged into Redis alone, drained from its own instant: a token spent 30
  // minutes ago on a bucket refilling 10 an hour is "gone" (it drains in 6 minutes), and so is
  // each of the other nine, though together they leave a backlog of 5 tokens. Redis is charged
  // nothing; the caller gets a full bucket after the recovery: 10 + 10 in 30 minutes, not 10 + 5.
  it.each(['token-bucket', 'gcra'] as Algorithm[])(
    '%s: spends of the fallback charged after a refill interval leave the backlog they make together',
    async (algorithm) => {
      const clock = new TestClock();
      const via = await proxy();
      const store = processStore(via, `review:drain:${algorithm}:${Math.random()}:`, clock);
      const l = limiter(store, { algorithm, limit: 10, window: '1h' });
      await established([store]);
      await cut(via, [store]);
      expect(await allowedOf(l, 'victim', 12)).toBe(10);
      clock.advance(30 * 60_000); // 5 tokens refilled
      via.up();
      await until(() => answers(store));
      await until(() => store.fleet.owing === 0);
      expect(store.fleet.reconciled).toBe(10);
      const after = await allowedOf(l, 'victim', 12);
      expect(after).toBeLessThanOrEqual(5);
    },
  );

  // Attack (the infrastructure): the reply to a reconciliation's charge is lost with its
  // connection. The charge ran in Redis, but the journal still says nothing was charged, and the
  // next beat charges it again: a compensation is not recorded, so nothing stops the copy. The
  // caller, who spent 2 of 5, finds 1 left.
  it('a charge whose reply is lost, sent again after the next beat, is charged once', async () => {
    const clock = new TestClock();
    const via = await proxy();
    const store = processStore(via, `review:lost:${Math.random()}:`, clock);
    const l = limiter(store, { algorithm: 'fixed-window', limit: 5, window: '1h' });
    await established([store]);
    await cut(via, [store]);
    expect(await allowedOf(l, 'victim', 2)).toBe(2);
    const internals = store as unknown as { run: (id: string, ...rest: unknown[]) => unknown };
    const run = internals.run.bind(store);
    let dropped = false;
    jest.spyOn(internals, 'run').mockImplementation((id: string, ...rest: unknown[]) => {
      if (id === 'fixed-window/refund' && !dropped) {
        dropped = true;
        via.dropNextReply(); // it runs; its answer is lost with the connection
      }
      return run(id, ...rest);
    });
    via.up();
    await until(() => answers(store));
    await until(() => store.fleet.owing === 0);
    expect(dropped).toBe(true);
    expect(await allowedOf(l, 'victim', 5)).toBe(3);
  });

  // Attack: be locked out during the outage, then wait for the recovery. The fallback's lockout
  // (policy option `block`) lives in this process's memory only: nothing of it is journaled or
  // written into Redis when Redis is back, so a caller locked out for an hour after guessing past
  // the limit is let in again as soon as Redis answers (here two minutes later, in a new window).
  it('a lockout the fallback started still holds once Redis is back', async () => {
    const clock = new TestClock();
    const via = await proxy();
    const store = processStore(via, `review:block:${Math.random()}:`, clock);
    const l = limiter(store, {
      algorithm: 'fixed-window',
      limit: 2,
      window: '1m',
      block: { duration: '1h' },
    });
    await established([store]);
    await cut(via, [store]);
    expect(await allowedOf(l, 'victim', 2)).toBe(2);
    const refused = await l.consume('victim');
    expect(refused.allowed).toBe(false);
    expect(refused.blockedUntil).toBeGreaterThanOrEqual(clock.now + 3_600_000 - 1);
    clock.advance(2 * 60_000);
    via.up();
    await until(() => answers(store));
    await until(() => store.fleet.owing === 0);
    const back = await l.consume('victim');
    expect(back.failure).toBeUndefined();
    expect(back.allowed).toBe(false);
  });

  // Attack: flush the journal. It kept at most 100 000 spends and dropped the oldest when full,
  // though they still weighed (inside their window): those are never charged into Redis.
  // Spend the victim's budget early in the outage, then have the fallback allow 100 000 cheap
  // spends on keys of one's own (a botnet's addresses, made-up user names): once Redis is back the
  // victim's key holds nothing of the outage, and the same window gives its budget again. (The
  // fallback alone, no Redis needed: what it owes the store is what gets charged.)
  it('every spend the fallback allowed is charged into the store, however many it allowed', async () => {
    const clock = new TestClock();
    const fallback = new FleetFallback(
      {
        view: () => ({ size: 1, rank: 0, established: true, seenAt: 0 }),
        lifetimeMs: () => 3_600_000,
        owes: () => undefined,
      },
      clock.read,
    );
    const spend = (key: string) =>
      fallback.consume({
        policy: 'login',
        algorithm: 'fixed-window',
        limits: [{ limit: 5, windowMs: 3_600_000, burst: 5 }],
        keys: [key],
        cost: 1,
      });
    let allowed = 0;
    for (let i = 0; i < 5; i++) if ((await spend('victim')).allowed) allowed++;
    expect(allowed).toBe(5);
    // (Each spend weighs on 2 entries: its key's state and its ledger.) A full journal refuses.
    for (let i = 0; i < MAX_FALLBACK_ENTRIES / 2 + 10; i++) {
      if ((await spend(`bot${i}`)).allowed) allowed++;
    }
    expect(allowed).toBe(MAX_FALLBACK_ENTRIES / 2);
    const owed = [...fallback.owing()];
    expect(owed.filter((s) => s.request.keys[0] === 'victim')).toHaveLength(5);
    expect(owed).toHaveLength(allowed);
    expect(fallback.refusedFull).toBe(10 + 5);
  });

  // Attack: the same flood during the outage. The fallback's MemoryStore keeps at most 100 000
  // entries (its default maxKeys, which the fallback gives no way to set) and forgets the ones used
  // longest ago: the victim's key, left alone while the flood of new keys goes by, starts again
  // from a full share, again and again, however long the outage lasts.
  it("a flood of new keys during the outage does not give the victim's key its share again", async () => {
    const fallback = new FleetFallback(
      {
        view: () => ({ size: 1, rank: 0, established: true, seenAt: 0 }),
        lifetimeMs: () => 3_600_000,
        owes: () => undefined,
      },
      new TestClock().read,
    );
    const spend = (key: string) =>
      fallback.consume({
        policy: 'login',
        algorithm: 'fixed-window',
        limits: [{ limit: 5, windowMs: 3_600_000, burst: 5 }],
        keys: [key],
        cost: 1,
      });
    let victim = 0;
    for (let i = 0; i < 5; i++) if ((await spend('victim')).allowed) victim++;
    for (let i = 0; i < 100_000; i++) await spend(`bot${i}`);
    for (let i = 0; i < 5; i++) if ((await spend('victim')).allowed) victim++;
    expect(victim).toBe(5);
  });

  // Option `fleetBeatMs` sets how long an announcement lasts (3 beats), but the heartbeat's timer
  // always runs every FLEET_BEAT_MS (5 s): with fleetBeatMs 100 a process lapses from the fleet
  // between two beats, joins again at each (never established: the fallback refuses everything),
  // and with fleetBeatMs above 5 s, beats come more often than the option says.
  it('the heartbeat beats every fleetBeatMs', async () => {
    // Only the interval is fake: Redis I/O, timeouts and clocks run as usual.
    jest.useFakeTimers({
      doNotFake: [
        'Date',
        'hrtime',
        'nextTick',
        'performance',
        'queueMicrotask',
        'setImmediate',
        'clearImmediate',
        'setTimeout',
        'clearTimeout',
      ],
    });
    const via = await proxy();
    const store = processStore(via, `review:interval:${Math.random()}:`);
    const internals = store as unknown as { run: (id: string, ...rest: unknown[]) => unknown };
    const run = internals.run.bind(store);
    let beats = 0;
    jest.spyOn(internals, 'run').mockImplementation((id: string, ...rest: unknown[]) => {
      if (id === 'fleet/beat') beats++;
      return run(id, ...rest);
    });
    await until(() => open[open.length - 1]!.status === 'ready'); // the first beat gets through
    limiter(store, { algorithm: 'fixed-window', limit: 5, window: '1h' }); // starts the heartbeat
    await until(() => beats === 1 && store.fleet.view !== undefined, 2_000);
    for (let beat = 2; beat <= 3; beat++) {
      const seenAt = store.fleet.view!.seenAt;
      jest.advanceTimersByTime(BEAT_MS); // one interval of fleetBeatMs: one more beat
      await until(() => beats === beat && store.fleet.view!.seenAt !== seenAt, 2_000);
    }
  });
});
