import { createServer } from 'node:net';
import Redis from 'ioredis';
import type { RedisStore } from '../../../lib';
import { RedlimitConnection } from '../../../lib/nest';
import { startRedisServer, type StartedRedisServer, uniquePrefix } from '../../support/redis';
import { PLATFORMS, startApp } from '../support/app';
import { failModeApp, TIMEOUT_MS } from './fail-modes.app';

/** A port nothing listens on (taken from the OS, then released). */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

// Only catches a hang (a decision that waited for Redis instead of timeoutMs): generous, since a
// shared 2-core machine can be slow to answer an HTTP request at all.
const MARGIN_MS = 2_000;

describe.each(PLATFORMS)('fail modes on %s', (platform) => {
  describe('Redis unreachable', () => {
    let url: string;
    beforeAll(async () => {
      url = `redis://127.0.0.1:${await deadPort()}`;
    });

    it(`closed: 503 with Retry-After within timeoutMs + margin, on @Throttle and @Attempt routes`, async () => {
      const app = await startApp(failModeApp(url, 'closed'), platform);
      try {
        for (const [method, path] of [
          ['GET', '/throttled'],
          ['POST', '/attempt'],
        ] as const) {
          const started = performance.now();
          const response = await app.request(path, { method });
          expect(performance.now() - started).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
          expect(response.status).toBe(503);
          expect(response.headers.get('retry-after')).toBe('1');
          expect(response.headers.get('ratelimit')).toBeNull();
          expect(await response.json()).toMatchObject({ statusCode: 503, policy: 'api' });
        }
      } finally {
        await app.close();
      }
    });

    it('closed, in shadow mode: 200 on @Throttle and @Attempt routes (shadow refuses nothing), and the failure is logged', async () => {
      const app = await startApp(failModeApp(url, 'closed', 100, 'rl:', true), platform);
      try {
        expect((await app.request('/throttled')).status).toBe(200);
        expect([200, 201]).toContain((await app.request('/attempt', { method: 'POST' })).status);
        expect(app.logs.join('\n')).toMatch(
          /warn: Store (error|timeout) for policy 'api', in shadow mode: requests are allowed/,
        );
      } finally {
        await app.close();
      }
    });

    it('open: 200, and the failure is logged', async () => {
      const app = await startApp(failModeApp(url, 'open'), platform);
      try {
        const started = performance.now();
        expect((await app.request('/throttled')).status).toBe(200);
        expect(performance.now() - started).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
        expect([200, 201]).toContain((await app.request('/attempt', { method: 'POST' })).status);
        expect(app.logs.join('\n')).toMatch(
          /warn: Store (error|timeout) for policy 'api', failing open/,
        );
      } finally {
        await app.close();
      }
    });
  });

  describe('Redis hangs (process frozen)', () => {
    let server: StartedRedisServer;
    let pid: number;
    beforeAll(async () => {
      server = await startRedisServer();
      const probe = new Redis(server.url);
      pid = Number(/process_id:(\d+)/.exec(await probe.info('server'))![1]);
      probe.disconnect();
    });
    afterAll(async () => {
      process.kill(pid, 'SIGCONT');
      await server.stop();
    });

    async function whileFrozen<T>(work: () => Promise<T>): Promise<T> {
      process.kill(pid, 'SIGSTOP');
      try {
        return await work();
      } finally {
        process.kill(pid, 'SIGCONT');
      }
    }

    it.each([
      ['closed', 503],
      ['open', 200],
    ] as const)('%s: answers %i after timeoutMs, not later', async (mode, status) => {
      const app = await startApp(failModeApp(server.url, mode), platform);
      try {
        expect((await app.request('/throttled')).status).toBe(200); // connected and warm
        const started = performance.now();
        const response = await whileFrozen(() => app.request('/throttled'));
        const elapsed = performance.now() - started;
        expect(response.status).toBe(status);
        expect(elapsed).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
        expect(elapsed).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
      } finally {
        await app.close();
      }
    });

    it("memory: the fallback keeps limiting with this process's share (the whole limit: a fleet of one), 429 not 503, until Redis answers", async () => {
      const app = await startApp(
        failModeApp(server.url, 'memory', 2, uniquePrefix('e2e-memory')),
        platform,
      );
      try {
        expect((await app.request('/throttled')).status).toBe(200); // connected and warm
        // The fallback has a share once this process has been in its fleet for a beat (5 s).
        const store = app.app.get(RedlimitConnection).store as RedisStore;
        while (!store.fleet.view?.established) {
          await new Promise((resolve) => setTimeout(resolve, 250));
          await store.heartbeat();
        }
        expect(store.fleet.view.size).toBe(1);
        const statuses = await whileFrozen(async () => {
          const out: number[] = [];
          for (let i = 0; i < 3; i++) out.push((await app.request('/throttled')).status);
          return out;
        });
        expect(statuses).toEqual([200, 200, 429]);
        expect(app.logs.join('\n')).toMatch(/limiting in this process's memory/);
      } finally {
        await app.close();
      }
    });
  });
});
