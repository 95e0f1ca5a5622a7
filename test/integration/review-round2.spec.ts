// Review, round two, of failMode 'memory' across a fleet and of outcome markers for lost replies:
// call sequences that get more than the limit through, or create budget at reconciliation or by
// refunds. Each store stands for one process, its connection through a proxy that can cut it.
import Redis from 'ioredis';
import { type Decision, Limiter, RedisStore } from '../../lib';
import type { Algorithm } from '../../lib/core/policy';
import { monotonicNow } from '../../lib/core/clock.util';
import { TestClock } from '../support/backends';
import { answers, fleetHarness } from '../support/fleet-harness';
import { until } from '../support/until';

const BEAT_MS = 100;
const TTL_MS = 2_000;

describe("review round 2: failMode 'memory' and outcome markers", () => {
  const { server, open, proxy, processStore, limiter, established, allowedOf, cut } = fleetHarness({
    beatMs: BEAT_MS,
    ttlMs: TTL_MS,
  });

  // Attack (holder of a receipt): a bucket's fallback spends are charged per caller key as one
  // backlog, under a charge marker named after the group's first spend (`<outcome key of its
  // id>:charged`). Refunding that first spend after the recovery charges it alone, under the
  // same marker name: the script reads the marker (the whole group's 4 tokens) as what this
  // spend weighs and gives all 4 back. One receipt of one unit returns the group's backlog; the
  // other three receipts then give back one more each: 7 given back for 4 spent.
  it.each(['token-bucket', 'gcra'] as Algorithm[])(
    "%s: refunding the first fallback spend after the recovery gives back only that spend's unit",
    async (algorithm) => {
      const clock = new TestClock();
      const via = await proxy();
      const store = processStore(via, `r2:first:${algorithm}:${Math.random()}:`, clock);
      const l = limiter(store, { algorithm, limit: 10, window: '1h' });
      await established([store]);
      await cut(via, [store]);
      const spent: Decision[] = [];
      for (let i = 0; i < 4; i++) spent.push(await l.consume('k'));
      expect(spent.every((d) => d.allowed)).toBe(true);
      via.up();
      await until(() => answers(store));
      await until(() => store.fleet.owing === 0);
      expect((await l.peek('k')).remaining).toBe(5); // 10 − 4, less the unit peeked
      expect(await l.refund(spent[0]!)).toBe(true);
      await until(() => store.fleet.owing === 0);
      await store.heartbeat();
      expect((await l.peek('k')).remaining).toBe(6);
    },
  );
  // Attack (the infrastructure): lose one heartbeat's reply. C joins a fleet of one (A). A's next
  // beat runs in Redis (its score is after C joined) but its reply is lost with the connection, so
  // A keeps its view of a fleet of one. C's next beat finds every other member beaten since it
  // joined and takes itself for established (a fleet of 2: share 3 of 6), though A never saw it.
  // Redis then fails for both: A admits its old share (6), C its new one (3): 9 of a limit of 6.
  // (Being counted by the others must rest on what they were answered, not on what Redis ran.)
  it('a beat that ran in Redis but whose reply was lost does not let a newcomer take a share', async () => {
    const prefix = `r2:lostbeat:${Math.random()}:`;
    const clock = new TestClock();
    const [pa, pc] = [await proxy(), await proxy()];
    const a = processStore(pa, prefix, clock);
    const policy = { algorithm: 'fixed-window', limit: 6, window: '1h' };
    const la = limiter(a, policy);
    await established([a]);
    // A's next beat waits until C has joined, runs, and its reply is lost; A is cut from then on.
    const internals = a as unknown as { run: (id: string, ...rest: unknown[]) => Promise<unknown> };
    const run = internals.run.bind(a);
    let joined!: () => void;
    const cJoined = new Promise<void>((resolve) => (joined = resolve));
    let armed = true;
    let lost = false;
    jest.spyOn(internals, 'run').mockImplementation(async (id: string, ...rest: unknown[]) => {
      if (id !== 'fleet/beat' || !armed) return run(id, ...rest);
      armed = false;
      await cJoined;
      pa.dropNextReply();
      try {
        return await run(id, ...rest);
      } finally {
        lost = true;
        pa.down();
      }
    });
    const c = processStore(pc, prefix, clock);
    const lc = limiter(c, policy);
    await until(() => answers(c));
    joined();
    await until(() => lost);
    await until(async () => !(await answers(a)));
    expect(a.fleet.view?.size).toBe(1);
    await until(async () => (await answers(c)) && c.fleet.view?.established === true);
    await cut(pc, [c]);
    const total = (await allowedOf(la, 'victim', 8)) + (await allowedOf(lc, 'victim', 8));
    expect(total).toBeLessThanOrEqual(6);
  });
  // Attack (someone who knows the victim's account): lock the victim out during a partial outage.
  // A's connection fails; the attacker's guesses through A pass A's share and A's fallback locks
  // the victim out for an hour. Process B still reaches Redis, and the owner has the account
  // unlocked there (Limiter.reset: the state and lockout go, the key's reset mark moves). When A
  // reaches Redis again it writes its lockout into Redis: the owner is locked out again, an hour
  // from the attacker's guesses, whatever the reset did. (Fallback charges made before a reset are
  // dropped by the reset mark; the lockout is written whatever it is.)
  it('a lockout the fallback started before a reset in another process is not written after it', async () => {
    const prefix = `r2:lockreset:${Math.random()}:`;
    const clock = new TestClock();
    const [pa, pb] = [await proxy(), await proxy()];
    const a = processStore(pa, prefix, clock);
    const b = processStore(pb, prefix, clock);
    const policy = { algorithm: 'fixed-window', limit: 4, window: '1m', block: { duration: '1h' } };
    const [la, lb] = [limiter(a, policy), limiter(b, policy)];
    await established([a, b]);
    await cut(pa, [a]);
    expect(await allowedOf(la, 'victim', 2)).toBe(2); // A's share
    const refused = await la.consume('victim');
    expect(refused.allowed).toBe(false);
    expect(refused.blockedUntil).toBeDefined();
    clock.advance(1_000);
    await lb.reset('victim'); // the owner's unlock, through B
    clock.advance(2 * 60_000); // a new window
    pa.up();
    await until(() => answers(a));
    await until(() => a.fleet.owing === 0);
    await a.heartbeat();
    const owner = await lb.consume('victim');
    expect(owner.failure).toBeUndefined();
    expect(owner.allowed).toBe(true);
  });
  // (Holds.) Attack: be the first to reach Redis when it is back. The reconciliation is started by the
  // first decision Redis answers, so that decision (and any others sent meanwhile) is made on a
  // bucket that holds none of the outage's spends. The fallback's backlog is then charged as a
  // spend made back at the latest fallback spend's instant, before the bucket's new busy period:
  // a bucket "full since the spend" takes nothing. The caller, who spent the whole limit in the
  // fallback, gets the whole limit again.
  it.each(['token-bucket', 'gcra'] as Algorithm[])(
    '%s: a decision Redis makes before the reconciliation does not void the backlog charged after it',
    async (algorithm) => {
      const clock = new TestClock();
      const via = await proxy();
      const store = processStore(via, `r2:first-in:${algorithm}:${Math.random()}:`, clock);
      const l = limiter(store, { algorithm, limit: 10, window: '1h' });
      await established([store]);
      await cut(via, [store]);
      expect(await allowedOf(l, 'victim', 12)).toBe(10);
      clock.advance(1_000);
      // The charges wait until the attacker's first call has been answered by Redis.
      const internals = store as unknown as {
        run: (id: string, ...rest: unknown[]) => Promise<unknown>;
      };
      const run = internals.run.bind(store);
      let release!: () => void;
      const first = new Promise<void>((resolve) => (release = resolve));
      jest.spyOn(internals, 'run').mockImplementation(async (id: string, ...rest: unknown[]) => {
        if (id === `${algorithm}/refund`) await first;
        return run(id, ...rest);
      });
      via.up();
      await until(async () => (await l.peek('victim')).failure === undefined);
      const before = await l.consume('victim');
      expect(before.failure).toBeUndefined();
      release();
      await until(() => store.fleet.owing === 0);
      await store.heartbeat();
      expect(await allowedOf(l, 'victim', 12)).toBe(0);
    },
  );
  // Attack (the infrastructure): lose the reply of a bucket's backlog charge, and Redis again with
  // it. The charge ran (10 tokens at the outage's instant, its marker says 10) but the journal
  // still owes it. Half an hour later the bucket has drained 5 and the fallback allows 5 more;
  // when Redis is back the backlog is charged again, now at the latest spend's instant: 10 tokens
  // again, which the marker (written at the first instant) says are there already, so nothing is
  // charged. Redis holds the first charge drained by half an hour: 5, where the caller's backlog
  // is 10. The caller gets 5 more at once: 20 in half an hour of a bucket of 10 an hour.
  it.each(['token-bucket', 'gcra'] as Algorithm[])(
    '%s: a backlog charge whose reply was lost, charged again later with more spends, is charged in full',
    async (algorithm) => {
      const clock = new TestClock();
      const via = await proxy();
      const store = processStore(via, `r2:backlog-lost:${algorithm}:${Math.random()}:`, clock);
      const l = limiter(store, { algorithm, limit: 10, window: '1h' });
      await established([store]);
      await cut(via, [store]);
      expect(await allowedOf(l, 'victim', 12)).toBe(10);
      const internals = store as unknown as {
        run: (id: string, ...rest: unknown[]) => Promise<unknown>;
      };
      const run = internals.run.bind(store);
      let dropped = false;
      jest.spyOn(internals, 'run').mockImplementation(async (id: string, ...rest: unknown[]) => {
        if (id !== `${algorithm}/refund` || dropped) return run(id, ...rest);
        dropped = true;
        via.dropNextReply(); // it runs; its answer is lost with the connection
        try {
          return await run(id, ...rest);
        } finally {
          via.down(); // and Redis is away again
        }
      });
      via.up();
      await until(() => dropped);
      await until(async () => !(await answers(store)));
      expect(store.fleet.owing).toBe(10);
      clock.advance(30 * 60_000); // 5 tokens drained
      expect(await allowedOf(l, 'victim', 12)).toBe(5);
      via.up();
      await until(() => answers(store));
      await until(() => store.fleet.owing === 0);
      expect(await allowedOf(l, 'victim', 12)).toBe(0);
    },
  );
  // Attack (the infrastructure: Redis's clock ahead of the store's estimate, e.g. stepped): the
  // first spend of a coalesced run reaches Redis past its deadline on the script's clock while its
  // caller's deadline has not passed, so the store decides it again alone, with the same spend id.
  // A lone spend's marker is named after its spend id, and so is the run's hash (after its first
  // spend): when another spend of the run was allowed, the lone spend finds the run's hash where
  // its string marker goes, and the script fails (WRONGTYPE): the caller gets a store failure
  // (failMode 'open' lets it through unlimited), and its settlement fails the same way.
  it("a run's first spend decided again alone does not meet the run's hash", async () => {
    const client = new Redis(server().port);
    open.push(client);
    const store = new RedisStore({ client, prefix: `r2:runhash:${Math.random()}:` });
    const request = (key: string, deadlineAt?: number) => ({
      policy: 'p',
      algorithm: 'fixed-window' as const,
      limits: [{ limit: 5, windowMs: 3_600_000, burst: 5 }],
      keys: [key],
      cost: 1,
      ...(deadlineAt !== undefined && { deadlineAt }),
    });
    await store.consume(request('warm')); // the Redis clock measured
    const offset = (store as unknown as { redisClock: { value: number | undefined } }).redisClock;
    const measured = offset.value!;
    // The estimate 5 s behind Redis: deadlines on the script's clock 5 s early.
    Object.defineProperty(offset, 'value', { get: () => measured - 5_000 });
    const now = monotonicNow();
    const lone = store.consume(request('k0')); // sent alone: the slot is busy
    const first = store.consume(request('k1', now + 2_000)); // late on the script's clock
    const second = store.consume(request('k2')); // no deadline: allowed in the run
    await expect(lone).resolves.toMatchObject({ allowed: true });
    await expect(second).resolves.toMatchObject({ allowed: true });
    const outcome = await first.then(
      (r) => (r.allowed ? 'allowed' : 'refused'),
      (e: Error) => e.message,
    );
    expect(outcome).not.toMatch(/WRONGTYPE/);
  });
  // Attack (a caller who can reset their own key, e.g. a reset on a successful sign-in, through a
  // process that still reaches Redis): spend once through A's fallback, have the key reset through
  // B, then spend A's share again through A's fallback. A's bucket spends are charged as one
  // backlog "not on a key reset since" its first spend: the reset came after that one, so the
  // whole backlog is dropped, the spends made after the reset with it. Once A is back the caller
  // finds a full bucket: 1 + 9 through the fallback after the reset and 10 more at once.
  it.each(['token-bucket', 'gcra'] as Algorithm[])(
    '%s: a reset between fallback spends drops only those made before it',
    async (algorithm) => {
      const prefix = `r2:bucket-reset:${algorithm}:${Math.random()}:`;
      const clock = new TestClock();
      const [pa, pb] = [await proxy(), await proxy()];
      const a = processStore(pa, prefix, clock);
      const b = processStore(pb, prefix, clock);
      const policy = { algorithm, limit: 10, window: '1h' };
      const la = limiter(a, policy);
      const lb = new Limiter(b, { name: 'login', ...policy }, { timeoutMs: 500 });
      await established([a]);
      await cut(pa, [a]);
      expect(await allowedOf(la, 'me', 1)).toBe(1);
      clock.advance(1_000);
      await lb.reset('me');
      clock.advance(1_000);
      expect(await allowedOf(la, 'me', 12)).toBe(9); // what the fallback still allows
      clock.advance(1_000);
      pa.up();
      await until(() => answers(a));
      await until(() => a.fleet.owing === 0);
      // The 9 spends made after the reset hold at least 9 tokens (less a few seconds' refill).
      expect(await allowedOf(la, 'me', 12)).toBeLessThanOrEqual(1);
    },
  );
});
