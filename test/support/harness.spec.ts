/**
 * The test harness's own test: shared Redis, key prefixes, extra servers,
 * worker processes and the cross-process barrier.
 */
import * as path from 'node:path';
import Redis from 'ioredis';
import { portAcceptsConnections, processAlive } from './redis-server';
import {
  barrier,
  createTestClient,
  redisUrl,
  spawnNodeWorkers,
  startRedisServer,
  uniquePrefix,
  warmPool,
} from './redis';

describe('test harness', () => {
  let client: Redis;

  beforeAll(() => {
    client = createTestClient();
  });

  afterAll(async () => {
    await client.quit();
  });

  it('provides the shared Redis through REDLIMIT_TEST_REDIS_URL', async () => {
    expect(redisUrl()).toMatch(/^rediss?:\/\//);
    if (!process.env.REDIS_URL) expect(new URL(redisUrl()).port).not.toBe('6379');
    await expect(client.ping()).resolves.toBe('PONG');
    await warmPool(client, 20);
  });

  it('gives every call of uniquePrefix its own prefix', () => {
    const a = uniquePrefix('harness');
    const b = uniquePrefix('harness');
    expect(a).toMatch(/^test:harness:[0-9a-f]{8}:$/);
    expect(a).not.toBe(b);
  });

  it('starts and stops a separate redis-server', async () => {
    const server = await startRedisServer(['--maxmemory', '10mb']);
    let stopped = false;
    try {
      expect(server.port).not.toBe(6379);
      expect(server.url).toBe(`redis://127.0.0.1:${server.port}`);
      expect(server.url).not.toBe(redisUrl());
      const second = new Redis(server.url, { maxRetriesPerRequest: 0, retryStrategy: () => null });
      let pid = 0;
      try {
        await expect(second.ping()).resolves.toBe('PONG');
        const maxmemory = (await second.config('GET', 'maxmemory')) as string[];
        expect(maxmemory[1]).toBe(String(10 * 1024 * 1024));
        // DEBUG is enabled on spawned servers (specs may use DEBUG SLEEP etc.).
        await expect(second.call('DEBUG', 'SLEEP', '0')).resolves.toBe('OK');
        pid = Number(/process_id:(\d+)/.exec(await second.info('server'))?.[1]);
      } finally {
        second.disconnect();
      }
      await server.stop();
      stopped = true;
      await expect(portAcceptsConnections(server.port)).resolves.toBe(false);
      expect(pid).toBeGreaterThan(0);
      expect(processAlive(pid)).toBe(false);
      await server.stop(); // idempotent
    } finally {
      if (!stopped) await server.stop();
    }
  });

  it('runs worker processes that pass a barrier together', async () => {
    const name = `${uniquePrefix('harness')}barrier`;
    const outputs = await spawnNodeWorkers(path.join(__dirname, 'fixtures', 'echo-worker.ts'), 2, {
      BARRIER_NAME: name,
      PARTIES: '2',
      MESSAGE: 'hello',
    });
    expect(outputs).toHaveLength(2);
    const lines = outputs.map(
      (o) => JSON.parse(o) as { index: number; message: string; releasedAt: number },
    );
    expect(lines.map((l) => l.index)).toEqual([0, 1]);
    expect(lines.every((l) => l.message === 'hello')).toBe(true);
    // Released together (the barrier itself already proves both were running at once).
    expect(Math.abs(lines[0]!.releasedAt - lines[1]!.releasedAt)).toBeLessThan(1000);
    await expect(client.get(`${name}:arrived`)).resolves.toBe('2');
  });

  it('rejects with the stderr of a failing worker', async () => {
    await expect(
      spawnNodeWorkers(path.join(__dirname, 'fixtures', 'echo-worker.ts'), 1, { BARRIER_NAME: '' }),
    ).rejects.toThrow(/BARRIER_NAME is not set/);
  });

  it('times out a barrier that not all parties reach', async () => {
    const lonely = createTestClient();
    try {
      await expect(barrier(lonely, `${uniquePrefix('harness')}lonely`, 2, 200)).rejects.toThrow(
        /1\/2 parties arrived/,
      );
    } finally {
      await lonely.quit();
    }
  });
});
