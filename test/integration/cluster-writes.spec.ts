/**
 * On a Redis Cluster, a batch holds the decisions of one slot, so with callers spread over slots
 * nearly every decision is a script run of its own. What one event-loop turn sends to one master
 * (decisions sent at once, coalesced batches) must still reach it in one socket write, as one
 * node gets them: the master then reads them once and answers them in one write. Counted here on
 * the client's sockets (test/support/socket-writes.ts), for ioredis and node-redis Cluster clients,
 * with what must not change: every answer, issue order per key, MOVED redirections, the library
 * reloaded after FUNCTION FLUSH, a master killed while a turn's writes are held.
 */
import Redis, { Cluster } from 'ioredis';
import { type Decision, Limiter, RedisStore, type RedisStoreClient } from '../../lib';
import { clusterSlot } from '../../lib/stores/cluster-slot.util';
import { storageKey } from '../../lib/stores/storage-key.util';
import { startRedisCluster, type StartedRedisCluster } from '../support/cluster';
import { clusterNodes } from '../support/cluster-handle';
import { connectNodeRedisCluster } from '../support/node-redis';
import { uniquePrefix } from '../support/redis';
import { countSocketWrites } from '../support/socket-writes';

const nodes = clusterNodes();
const describeOnCluster = nodes ? describe : describe.skip;
const POLICY = 'p';

/** The port of the master serving each slot. */
async function slotOwners(admin: Cluster): Promise<number[]> {
  const owners = new Array<number>(16384);
  const ranges = (await admin.cluster('SLOTS')) as unknown as Array<
    [number, number, [string, number]]
  >;
  for (const [from, to, [, port]] of ranges) owners.fill(port, from, to + 1);
  return owners;
}

/** `count` caller keys whose states live in distinct slots served by the master on `port`. */
function keysOn(owners: readonly number[], port: number, prefix: string, count: number): string[] {
  const keys: string[] = [];
  const slots = new Set<number>();
  for (let i = 0; keys.length < count; i++) {
    const key = `caller:${i}`;
    const slot = clusterSlot(storageKey(prefix, key, POLICY, 0));
    if (owners[slot] !== port || slots.has(slot)) continue;
    slots.add(slot);
    keys.push(key);
  }
  return keys;
}

/** An ioredis Cluster that refreshes its slot map only when told (no background writes). */
async function ioredisCluster(): Promise<Cluster> {
  const client = new Cluster(nodes!, {
    slotsRefreshInterval: 3_600_000,
    redisOptions: { maxRetriesPerRequest: 2 },
  });
  await new Promise((resolve) => client.once('ready', resolve));
  return client;
}

const CLIENTS: Array<[string, () => Promise<{ client: RedisStoreClient; close(): void }>]> = [
  [
    'ioredis',
    async () => {
      const client = await ioredisCluster();
      return { client, close: () => client.disconnect() };
    },
  ],
  [
    'node-redis',
    async () => {
      const client = await connectNodeRedisCluster(nodes!);
      return { client, close: () => client.destroy() };
    },
  ],
];

describeOnCluster.each(CLIENTS)(
  'Redis Cluster on %s: one write per master per turn',
  (_, connect) => {
    let client: RedisStoreClient;
    let close: () => void;
    let admin: Cluster;
    let owners: number[];
    let masters: number[];
    beforeAll(async () => {
      ({ client, close } = await connect());
      admin = await ioredisCluster();
      owners = await slotOwners(admin);
      masters = [...new Set(owners)].sort((a, b) => a - b);
    });
    afterAll(() => {
      close();
      admin.disconnect();
    });

    /** A fixed-window limiter on a fresh prefix, its library loaded and its clock measured. */
    const limiterFor = async (limit: number) => {
      const prefix = uniquePrefix('writes');
      const limiter = new Limiter(new RedisStore({ client, prefix }), {
        name: POLICY,
        algorithm: 'fixed-window',
        limit,
        window: '1h',
      });
      await limiter.consume('warm'); // measures the Redis clock
      for (const port of masters) await limiter.peek(keysOn(owners, port, prefix, 1)[0]!);
      return { prefix, limiter };
    };

    /** Runs `issue` (which issues its calls in this turn) and counts the writes to each master. */
    const counted = async <T>(issue: () => Promise<T>) => {
      const writes = countSocketWrites();
      try {
        const result = await issue();
        return { result, writes: masters.map((port) => writes.to(port)) };
      } finally {
        writes.stop();
      }
    };

    it('decisions issued in one turn on different slots of one master reach it in one write', async () => {
      const { prefix, limiter } = await limiterFor(2);
      const port = masters[0]!;
      const keys = keysOn(owners, port, prefix, 8);
      const { result, writes } = await counted(() =>
        Promise.all(keys.map((key) => limiter.consume(key))),
      );
      expect(writes).toEqual(masters.map((p) => (p === port ? 1 : 0)));
      expect(result.map((d) => [d.allowed, d.remaining, d.failure])).toEqual(
        keys.map(() => [true, 1, undefined]),
      );
    });

    it('a turn on every master: one write to each', async () => {
      const { prefix, limiter } = await limiterFor(2);
      const keys = masters.flatMap((port) => keysOn(owners, port, prefix, 5));
      const { result, writes } = await counted(() =>
        Promise.all(keys.map((key) => limiter.consume(key))),
      );
      expect(writes).toEqual(masters.map(() => 1));
      expect(result.every((d) => d.allowed && d.remaining === 1)).toBe(true);
    });

    it("a hot key's batch and the decisions sent at once in its turn share one write, in issue order", async () => {
      const { prefix, limiter } = await limiterFor(4);
      const port = masters[1]!;
      const [hot, ...others] = keysOn(owners, port, prefix, 4) as [string, ...string[]];
      // The first decision on the hot key goes at once, the next five wait for the end of the turn
      // and go as one batch.
      const { result, writes } = await counted(() =>
        Promise.all([hot, hot, ...others, hot, hot, hot, hot].map((key) => limiter.consume(key))),
      );
      expect(writes).toEqual(masters.map((p) => (p === port ? 1 : 0)));
      const answers = (key: string) =>
        result.filter((d) => d.receipt.keys[0] === key).map((d) => [d.allowed, d.remaining]);
      expect(answers(hot)).toEqual([
        [true, 3],
        [true, 2],
        [true, 1],
        [true, 0],
        [false, 0],
        [false, 0],
      ]);
      for (const key of others) expect(answers(key)).toEqual([[true, 3]]);
    });

    it('a decision queued microtasks after one sent at once still leaves in the same write', async () => {
      const { prefix, limiter } = await limiterFor(4);
      const port = masters[0]!;
      const [hot, other] = keysOn(owners, port, prefix, 2) as [string, string];
      const { result, writes } = await counted(async () => {
        const sentAtOnce = [limiter.consume(hot), limiter.consume(other)];
        // By now the client has taken those two (node-redis schedules its write when it does).
        for (let i = 0; i < 50; i++) await Promise.resolve();
        return Promise.all([...sentAtOnce, limiter.consume(hot), limiter.consume(hot)]);
      });
      expect(writes).toEqual(masters.map((p) => (p === port ? 1 : 0)));
      expect(result.map((d) => [d.receipt.keys[0], d.allowed, d.remaining])).toEqual([
        [hot, true, 3],
        [other, true, 3],
        [hot, true, 2],
        [hot, true, 1],
      ]);
    });

    it('issue order per key holds over turns, batches and a reset in between', async () => {
      const limit = 3;
      const { prefix, limiter } = await limiterFor(limit);
      const keys = keysOn(owners, masters[2]!, prefix, 3);
      // The model: a fixed window per key that a reset empties, in issue order.
      const count = new Map<string, number>();
      const expected: Array<[string, boolean]> = [];
      const pending: Array<Promise<Decision>> = [];
      const resets: Array<Promise<void>> = [];
      for (let turn = 0; turn < 6; turn++) {
        for (let i = 0; i < 5; i++) {
          const key = keys[(turn + i * (turn % 2 ? 2 : 1)) % keys.length]!;
          const used = count.get(key) ?? 0;
          expected.push([key, used < limit]);
          if (used < limit) count.set(key, used + 1);
          pending.push(limiter.consume(key));
        }
        if (turn === 2) {
          resets.push(limiter.reset(keys[0]!));
          count.set(keys[0]!, 0);
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
      const decisions = await Promise.all(pending);
      await Promise.all(resets);
      expect(decisions.map((d) => [d.receipt.keys[0], d.allowed])).toEqual(expected);
      expect(decisions.filter((d) => d.failure)).toEqual([]);
    });
  },
);

describeOnCluster('Redis Cluster on ioredis: held writes and what may happen to them', () => {
  let client: Cluster;
  let admin: Cluster;
  let owners: number[];
  let masters: number[];
  beforeAll(async () => {
    client = await ioredisCluster();
    admin = await ioredisCluster();
    owners = await slotOwners(admin);
    masters = [...new Set(owners)].sort((a, b) => a - b);
  });
  afterAll(() => {
    client.disconnect();
    admin.disconnect();
  });

  const limiterFor = async (limit: number) => {
    const prefix = uniquePrefix('held');
    const limiter = new Limiter(new RedisStore({ client, prefix }), {
      name: POLICY,
      algorithm: 'fixed-window',
      limit,
      window: '1h',
    });
    await limiter.consume('warm'); // measures the Redis clock
    for (const port of masters) await limiter.peek(keysOn(owners, port, prefix, 1)[0]!);
    return { prefix, limiter };
  };

  it('a decision that meets MOVED inside a turn’s write is redirected and answered, the others stand', async () => {
    const { prefix, limiter } = await limiterFor(2);
    const [wrongPort, rightPort] = [masters[0]!, masters[1]!];
    const [moved] = keysOn(owners, rightPort, prefix, 1) as [string];
    const slot = clusterSlot(storageKey(prefix, moved, POLICY, 0));
    const keys = keysOn(owners, wrongPort, prefix, 4);
    // A stale slot map: the client believes the moved key's slot is on the wrong master.
    const slots = (client as unknown as { slots: string[][] }).slots;
    const wrongNode = slots[clusterSlot(storageKey(prefix, keys[0]!, POLICY, 0))]![0]!;
    slots[slot] = [wrongNode];
    const wrong = new Redis(wrongPort, '127.0.0.1');
    try {
      const movedBefore = await movedErrors(wrong);
      const writes = countSocketWrites();
      let decisions: Decision[];
      try {
        decisions = await Promise.all([...keys, moved].map((key) => limiter.consume(key)));
      } finally {
        writes.stop();
      }
      expect(await movedErrors(wrong)).toBe(movedBefore + 1); // it did go to the wrong master
      expect(decisions.map((d) => [d.allowed, d.remaining, d.failure])).toEqual(
        [...keys, moved].map(() => [true, 1, undefined]),
      );
      // Each was spent once: the redirected one too.
      for (const key of [...keys, moved]) {
        expect((await limiter.consume(key)).remaining).toBe(0);
      }
    } finally {
      wrong.disconnect();
    }
  });
});

describeOnCluster(
  'Redis Cluster on ioredis, a cluster of its own: FUNCTION FLUSH, a master killed',
  () => {
    let own: StartedRedisCluster;
    beforeAll(async () => {
      own = await startRedisCluster();
    }, 60_000);
    afterAll(() => own.stop());

    // On a cluster of its own: a FUNCTION FLUSH of the shared one would disturb other files' counts.
    it('after FUNCTION FLUSH on every master, a turn of held decisions is answered, each spent once', async () => {
      const client = await own.createClient({ slotsRefreshInterval: 3_600_000 });
      const prefix = 'held-flush:';
      const limiter = new Limiter(new RedisStore({ client, prefix }), {
        name: POLICY,
        algorithm: 'fixed-window',
        limit: 2,
        window: '1h',
      });
      await limiter.consume('warm');
      const infos = await own.masters();
      const owners = new Array<number>(16384);
      for (const info of infos) for (const [a, b] of info.slots) owners.fill(info.port, a, b + 1);
      const keys = infos.flatMap((info) => keysOn(owners, info.port, prefix, 3));
      await Promise.all(client.nodes('master').map((node) => node.function('FLUSH')));
      const decisions = await Promise.all(keys.map((key) => limiter.consume(key)));
      expect(decisions.map((d) => [d.allowed, d.remaining, d.failure])).toEqual(
        keys.map(() => [true, 1, undefined]),
      );
      const again = await Promise.all(keys.map((key) => limiter.consume(key)));
      expect(again.map((d) => [d.allowed, d.remaining])).toEqual(keys.map(() => [true, 0]));
      client.disconnect();
    });

    it('every decision settles, none over its limit, and deciding resumes after the promotion', async () => {
      const client = await own.createClient({
        slotsRefreshInterval: 3_600_000,
        retryDelayOnFailover: 200,
        retryDelayOnClusterDown: 200,
      });
      const prefix = 'held-failover:';
      const limiter = new Limiter(
        new RedisStore({ client, prefix }),
        { name: POLICY, algorithm: 'fixed-window', limit: 3, window: '1h' },
        { timeoutMs: 500, failMode: 'closed', onStoreFailure: () => undefined },
      );
      const infos = await own.masters();
      const owners = new Array<number>(16384);
      for (const info of infos) for (const [a, b] of info.slots) owners.fill(info.port, a, b + 1);
      const victim = infos[0]!;
      const keys = [
        ...keysOn(owners, victim.port, prefix, 6),
        ...keysOn(owners, infos[1]!.port, prefix, 2),
      ];
      for (const key of keys) await limiter.peek(key);
      const decisions: Decision[] = [];
      // One turn: the decisions are held, then the master dies before they are written.
      const turn = keys.map((key) => limiter.consume(key));
      const killed = own.killNode(victim.port);
      decisions.push(...(await Promise.all(turn)));
      await killed;
      for (let round = 0; round < 20; round++) {
        decisions.push(...(await Promise.all(keys.map((key) => limiter.consume(key)))));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await own.waitForHealthy();
      const allowed = new Map<string, number>();
      for (const d of decisions) {
        if (d.allowed) allowed.set(d.receipt.keys[0]!, (allowed.get(d.receipt.keys[0]!) ?? 0) + 1);
      }
      // Nothing over the limit (a master's spends lost with it could only lower the counts seen).
      for (const key of keys) expect(allowed.get(key) ?? 0).toBeLessThanOrEqual(3);
      // The killed master's decisions failed closed; the other master's were decided.
      expect(decisions.slice(0, 6).every((d) => d.failure !== undefined && !d.allowed)).toBe(true);
      expect(decisions.slice(6, 8).map((d) => [d.allowed, d.failure])).toEqual([
        [true, undefined],
        [true, undefined],
      ]);
      const after = await limiter.consume('fresh');
      expect([after.allowed, after.failure]).toEqual([true, undefined]);
      client.disconnect();
    }, 60_000);
  },
);

/** MOVED errors the server has answered (INFO errorstats). */
async function movedErrors(node: Redis): Promise<number> {
  const info = await node.info('errorstats');
  return Number(/^errorstat_MOVED:count=(\d+)/m.exec(info)?.[1] ?? 0);
}
