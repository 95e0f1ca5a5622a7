/**
 * The cluster harness's own test: a real 3 masters + 3 replicas Redis Cluster
 * on local ports, an ioredis Cluster client on it, failover after SIGKILL of a
 * master, and a clean stop.
 */
import Redis, { type Cluster } from 'ioredis';
import { startRedisCluster, type ClusterNodeInfo, type StartedRedisCluster } from './cluster';
import { processAlive } from './redis-server';
import { clusterNodes } from './cluster-handle';

// Runs where the run has a cluster (the binaries exist, see global-setup.ts).
const describeOnCluster = clusterNodes() ? describe : describe.skip;

describeOnCluster('local Redis Cluster harness', () => {
  let cluster: StartedRedisCluster;
  let client: Cluster;
  let clientEnded = false;

  beforeAll(async () => {
    cluster = await startRedisCluster();
    client = await cluster.createClient();
    client.once('end', () => (clientEnded = true));
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('runs 3 masters and 3 replicas covering all 16384 slots', async () => {
    expect(cluster.nodes).toHaveLength(6);
    for (const { host, port } of cluster.nodes) {
      expect(host).toBe('127.0.0.1');
      expect(port).not.toBe(6379);
      expect(port).toBeLessThanOrEqual(55_535);
    }
    const masters = await cluster.masters();
    const replicas = await cluster.replicas();
    expect(masters).toHaveLength(3);
    expect(replicas).toHaveLength(3);
    const slots = masters.flatMap((m) => m.slots).reduce((n, [a, b]) => n + b - a + 1, 0);
    expect(slots).toBe(16_384);
    // One replica per master.
    expect(replicas.map((r) => r.masterId).sort()).toEqual(masters.map((m) => m.id).sort());
    for (const n of [...masters, ...replicas]) expect(processAlive(n.pid)).toBe(true);
  });

  it('serves SET/GET on keys of every master through an ioredis Cluster client', async () => {
    const byMaster = new Map<number, string>();
    for (let i = 0; byMaster.size < 3 && i < 100; i++) {
      const key = `harness:key:${i}`;
      const owner = await cluster.masterForKey(key);
      if (!byMaster.has(owner.port)) byMaster.set(owner.port, key);
    }
    expect(byMaster.size).toBe(3);
    for (const [port, key] of byMaster) {
      await expect(client.set(key, `v${port}`)).resolves.toBe('OK');
    }
    for (const [port, key] of byMaster) {
      await expect(client.get(key)).resolves.toBe(`v${port}`);
    }
  });

  it('runs EVAL on hash-tagged keys and rejects keys of different slots with CROSSSLOT', async () => {
    const script =
      "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('INCRBY', KEYS[2], ARGV[1])";
    await expect(client.eval(script, 2, '{harness:eval}a', '{harness:eval}b', 5)).resolves.toBe(5);
    await expect(client.get('{harness:eval}a')).resolves.toBe('5');
    // Keys of different slots: ioredis routes by the first key, the server refuses.
    const sha = (await client.script('LOAD', 'return 1')) as string;
    await expect(client.evalsha(sha, 2, 'harness:a', 'harness:b')).rejects.toThrow(/CROSSSLOT/);
  });

  it('promotes the replica after SIGKILL of a master; the client writes again', async () => {
    const key = '{harness:failover}';
    const before = await cluster.masterForKey(key);
    const replica = (await cluster.replicas()).find((r) => r.masterId === before.id);
    expect(replica).toBeDefined();

    await client.set(key, 'before');
    // Make sure the replica has the value before the master dies.
    const direct = new Redis({
      port: before.port,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    try {
      await expect(direct.call('WAIT', '1', '2000')).resolves.toBe(1);
    } finally {
      direct.disconnect();
    }

    const started = Date.now();
    await cluster.killNode(before.port, 'SIGKILL');
    expect(processAlive(before.pid)).toBe(false);
    await cluster.waitForHealthy(15_000);
    const failoverMs = Date.now() - started;

    const after: ClusterNodeInfo = await cluster.masterForKey(key);
    expect(after.port).toBe(replica?.port);
    expect(after.role).toBe('master');
    expect(await cluster.masters()).toHaveLength(3);
    expect(await cluster.replicas()).toHaveLength(2);

    await expect(client.get(key)).resolves.toBe('before');
    await expect(client.set(key, 'after')).resolves.toBe('OK');
    await expect(client.get(key)).resolves.toBe('after');
    expect(failoverMs).toBeLessThan(15_000);
  });

  it('stop() kills every node and is idempotent', async () => {
    const pids = (await cluster.nodeInfos()).map((n) => n.pid);
    expect(pids).toHaveLength(5); // one was killed above
    await cluster.stop();
    await cluster.stop();
    for (const pid of pids) expect(processAlive(pid)).toBe(false);
    // Disconnected by stop(). (Its status may read 'close' afterwards: ioredis emits
    // a late 'close' for each node connection that ends after the pool was drained.)
    expect(clientEnded).toBe(true);
    await expect(cluster.createClient()).rejects.toThrow(/stopped/);
  });
});
