import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Cluster } from 'ioredis';
import { Limiter, PolicyOverrides, RedisStore } from '../../../lib';
import { storageKey } from '../../../lib/stores/storage-key.util';
import { clusterSlot } from '../../../lib/stores/cluster-slot.util';
import { clusterNodes } from '../../support/cluster-handle';
import { uniquePrefix } from '../../support/redis';
import { getFreePort } from '../../support/redis-server';
import { startRedisSentinel, type StartedRedisSentinel } from '../../support/sentinel';
import { redlimit, removeBuiltCli } from './cli.process';

// Cluster and Sentinel run where the Cluster suites run (REDLIMIT_TEST_CLUSTER, set by .ci/run).
const nodes = clusterNodes();
const describeWithCluster = nodes ? describe : describe.skip;

jest.setTimeout(60_000);
afterAll(removeBuiltCli);

const POLICY = { name: 'login', algorithm: 'fixed-window', limit: 3, window: '15m' } as const;
const POLICIES = 'login=fixed-window:3/15m';
// Two caller keys in different Cluster slots.
const KEYS = ['user:alice', 'user:bob'];

interface PeekJson {
  allowed: boolean;
  keys: Array<{ key: string; remaining: number }>;
}

const list = (addresses: ReadonlyArray<{ host: string; port: number }>) =>
  addresses.map(({ host, port }) => `${host}:${port}`).join(',');

/** `peek` of both keys: what is left on each. */
async function remaining(args: readonly string[], env: Record<string, string>): Promise<number[]> {
  const run = await redlimit(
    ['peek', 'login', '--key', KEYS[0]!, '--key', KEYS[1]!, '--json', ...args],
    env,
  );
  expect(run).toMatchObject({ code: 0, stderr: '' });
  return (JSON.parse(run.stdout) as PeekJson).keys.map((k) => k.remaining);
}

describeWithCluster('redlimit command on a Redis Cluster', () => {
  let cluster: Cluster;
  let prefix: string;
  let limiter: Limiter;
  beforeAll(async () => {
    cluster = new Cluster(nodes!, { redisOptions: { maxRetriesPerRequest: 2 } });
    await new Promise((resolve) => cluster.once('ready', resolve));
  });
  afterAll(() => cluster.quit());
  beforeEach(() => {
    prefix = uniquePrefix('cli-cluster');
    limiter = new Limiter(new RedisStore({ client: cluster, prefix }), POLICY);
  });

  it('the keys really are in different slots', () => {
    expect(clusterSlot(storageKey(prefix, KEYS[0]!, 'login', 0))).not.toBe(
      clusterSlot(storageKey(prefix, KEYS[1]!, 'login', 0)),
    );
  });

  it('--cluster: peek shows what was spent on keys of different slots, reset gives it back', async () => {
    await limiter.consume(KEYS[0]!);
    await limiter.consume(KEYS, { cost: 2 });
    const env = { REDLIMIT_PREFIX: prefix, REDLIMIT_POLICIES: POLICIES };
    const flags = ['--cluster', list(nodes!.slice(0, 2))];
    expect(await remaining(flags, env)).toEqual([0, 1]);

    const reset = await redlimit(
      ['reset', 'login', '--key', KEYS[0]!, '--key', KEYS[1]!, ...flags],
      env,
    );
    expect(reset).toMatchObject({ code: 0, stderr: '' });
    expect(await remaining(flags, env)).toEqual([3, 3]);
    expect((await limiter.consume(KEYS, { cost: 3 })).allowed).toBe(true);
  });

  it('--cluster: policies set for a tenant holds on the cluster for keys of different slots, for that tenant only', async () => {
    const env = { REDLIMIT_PREFIX: prefix, REDLIMIT_POLICIES: POLICIES };
    const flags = ['--cluster', list(nodes!.slice(0, 2))];
    const set = await redlimit(
      ['policies', 'set', 'login', '--limit', '5', '--scope', 'user:', ...flags],
      env,
    );
    expect(set).toMatchObject({ code: 0, stderr: '' });
    const overrides = new PolicyOverrides(new RedisStore({ client: cluster, prefix }).overrides());
    await overrides.start();
    try {
      const live = new Limiter(new RedisStore({ client: cluster, prefix }), POLICY, { overrides });
      const admitted = async (key: string) => {
        let n = 0;
        for (let i = 0; i < 8; i++) if ((await live.consume(key)).allowed) n++;
        return n;
      };
      expect(await admitted(KEYS[0]!)).toBe(5);
      expect(await admitted(KEYS[1]!)).toBe(5);
      expect(await admitted('team:x')).toBe(3);
      const listed = await redlimit(['policies', 'list', '--json', ...flags], env);
      expect(JSON.parse(listed.stdout)).toMatchObject({
        overrides: [{ policy: 'login', scope: 'user:', change: { limit: 5 } }],
      });
    } finally {
      overrides.stop();
    }
  });

  it('REDLIMIT_REDIS_CLUSTER_NODES, as the module reads it, works as --cluster does', async () => {
    await limiter.consume(KEYS[1]!);
    const env = {
      REDLIMIT_PREFIX: prefix,
      REDLIMIT_POLICIES: POLICIES,
      REDLIMIT_REDIS_CLUSTER_NODES: list(nodes!),
      REDIS_URL: 'redis://127.0.0.1:1', // the app's other Redis: the cluster variable wins
    };
    expect(await remaining([], env)).toEqual([3, 2]);
    const policies = await redlimit(['policies', '--json'], env);
    expect(JSON.parse(policies.stdout)).toMatchObject({ redis: `cluster ${list(nodes!)}` });
  });
});

describeWithCluster('redlimit command on Redis Sentinel', () => {
  let deployment: StartedRedisSentinel;
  let prefix: string;
  let limiter: Limiter;
  let dir: string;
  beforeAll(async () => {
    deployment = await startRedisSentinel();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redlimit-cli-'));
  });
  afterAll(async () => {
    fs.rmSync(dir, { recursive: true, force: true });
    await deployment?.stop();
  });
  beforeEach(async () => {
    prefix = uniquePrefix('cli-sentinel');
    limiter = new Limiter(
      new RedisStore({ client: await deployment.createClient(), prefix }),
      POLICY,
    );
  });

  it('--sentinel and --sentinel-name: peek and reset on the master the sentinels name', async () => {
    await limiter.consume(KEYS, { cost: 2 });
    const env = { REDLIMIT_PREFIX: prefix, REDLIMIT_POLICIES: POLICIES };
    const flags = ['--sentinel', list(deployment.sentinels), '--sentinel-name', deployment.name];
    expect(await remaining(flags, env)).toEqual([1, 1]);
    const reset = await redlimit(['reset', 'login', '--key', KEYS[0]!, ...flags], env);
    expect(reset).toMatchObject({ code: 0, stderr: '' });
    expect(await remaining(flags, env)).toEqual([3, 1]);
  });

  it('REDLIMIT_REDIS_SENTINELS and REDLIMIT_REDIS_SENTINEL_NAME from a --dotenv file', async () => {
    await limiter.consume(KEYS[0]!);
    const file = path.join(dir, 'redlimit.env');
    fs.writeFileSync(
      file,
      [
        `REDLIMIT_REDIS_SENTINELS=${list(deployment.sentinels)}`,
        `REDLIMIT_REDIS_SENTINEL_NAME=${deployment.name}`,
        `REDLIMIT_PREFIX=${prefix}`,
        `REDLIMIT_POLICIES=${POLICIES}`,
      ].join('\n'),
    );
    expect(await remaining(['--dotenv', file], {})).toEqual([2, 3]);
    const policies = await redlimit(['policies', '--json', '--dotenv', file]);
    expect(JSON.parse(policies.stdout)).toMatchObject({
      redis: `sentinel '${deployment.name}' at ${list(deployment.sentinels)}`,
    });
  });

  it('sentinels that cannot be reached exit 3 with one line naming them', async () => {
    const closed = `127.0.0.1:${await getFreePort()}`;
    const run = await redlimit(
      [
        'peek',
        'login',
        '--key',
        'k',
        '--sentinel',
        closed,
        '--sentinel-name',
        'm',
        '--timeout',
        '1000',
      ],
      { REDLIMIT_POLICIES: POLICIES },
    );
    expect(run.code).toBe(3);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      new RegExp(`^redlimit: cannot reach Redis at sentinel 'm' at ${closed}: [^\\n]+\\n$`),
    );
  });
});

describe('redlimit command: --cluster and --sentinel usage', () => {
  const env = { REDLIMIT_POLICIES: POLICIES };
  it.each([
    [['--sentinel', '127.0.0.1:26379'], /--sentinel needs --sentinel-name/],
    [['--sentinel-name', 'm'], /--sentinel-name needs --sentinel/],
    [['--cluster', '127.0.0.1'], /--cluster: '127\.0\.0\.1' is not host:port/],
    [['--sentinel', 'x:0', '--sentinel-name', 'm'], /--sentinel: 'x:0' is not host:port/],
    [
      ['--redis', 'redis://127.0.0.1:1', '--cluster', '127.0.0.1:1'],
      /--redis, --cluster and --sentinel are alternatives: got --redis and --cluster/,
    ],
    [[], /no Redis configured: set REDLIMIT_REDIS_URL or REDIS_URL/],
  ])('%j exits 2 before Redis is contacted', async (flags, message) => {
    const run = await redlimit(['peek', 'login', '--key', 'k', ...flags], env);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^redlimit: [^\n]+\n$/);
    expect(run.stderr).toMatch(message);
  });

  it('an environment naming two Redis exits 2 naming the variables', async () => {
    const run = await redlimit(['policies'], {
      ...env,
      REDLIMIT_REDIS_URL: 'redis://127.0.0.1:1',
      REDLIMIT_REDIS_SENTINELS: '127.0.0.1:2',
      REDLIMIT_REDIS_SENTINEL_NAME: 'm',
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /REDLIMIT_REDIS_SENTINELS="127\.0\.0\.1:2" is invalid: REDLIMIT_REDIS_URL is set too/,
    );
  });
});
