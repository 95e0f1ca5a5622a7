/**
 * Helpers for specs. The shared Redis of the run is provisioned by
 * global-setup.ts and reached through redisUrl() / createTestClient().
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import Redis, { type RedisOptions } from 'ioredis';
import { spawnRedisServer } from './redis-server';

export { barrier } from './barrier';

const URL_ENV = 'REDLIMIT_TEST_REDIS_URL';
const REPO_ROOT = path.resolve(__dirname, '..', '..');

/** URL of the Redis shared by the whole test run. */
export function redisUrl(): string {
  const url = process.env[URL_ENV];
  if (!url) {
    throw new Error(
      `${URL_ENV} is not set: the Jest globalSetup (test/support/global-setup.ts) did not run. ` +
        'Run the tests through `npx jest` / `npm test` (jest.config.js), or set it by hand.',
    );
  }
  return url;
}

/** An ioredis client on the shared test Redis (connects right away). Call quit() when done. */
export function createTestClient(options: RedisOptions = {}): Redis {
  return new Redis(redisUrl(), {
    lazyConnect: false,
    maxRetriesPerRequest: 2,
    connectTimeout: 5_000,
    ...options,
  });
}

/** A key prefix of its own for a spec: `test:<name>:<8 hex>:`. */
export function uniquePrefix(name: string): string {
  return `test:${name}:${randomBytes(4).toString('hex')}:`;
}

/** Sends n concurrent PINGs and awaits them (warms up the connection before concurrency tests). */
export async function warmPool(client: Redis, n = 20): Promise<void> {
  await Promise.all(Array.from({ length: n }, () => client.ping()));
}

export interface StartedRedisServer {
  url: string;
  port: number;
  stop(): Promise<void>;
}

/**
 * Starts a SEPARATE throwaway redis-server (free port, never 6379, no
 * persistence, fresh temp dir) with extra flags, e.g. `['--cluster-enabled', 'yes']`.
 * Resolves once it answers PING; stop() kills it (SIGTERM, then SIGKILL) and
 * removes its dir. Always stop it (afterAll); it also dies with the Jest worker.
 */
export async function startRedisServer(extraArgs: string[] = []): Promise<StartedRedisServer> {
  const s = await spawnRedisServer(extraArgs);
  return { url: s.url, port: s.port, stop: () => s.stop() };
}

export interface SpawnWorkersOptions {
  /** Kill all workers and reject after this long (default 25 s, below Jest's 30 s test timeout). */
  timeoutMs?: number;
}

/**
 * Runs `count` OS processes of a TypeScript worker file concurrently, via
 * `node -r ts-node/register/transpile-only <script>`. Each gets process.env,
 * REDLIMIT_TEST_REDIS_URL, REDLIMIT_WORKER_INDEX (0..count-1),
 * REDLIMIT_WORKER_COUNT, then `env` (which wins). Resolves with each worker's
 * trimmed stdout, in index order, once all exited 0; rejects with the stderr
 * of the failed ones otherwise. A relative `script` is resolved from the repo root.
 */
export async function spawnNodeWorkers(
  script: string,
  count: number,
  env: Record<string, string> = {},
  options: SpawnWorkersOptions = {},
): Promise<string[]> {
  const scriptPath = path.resolve(REPO_ROOT, script);
  const register = require.resolve('ts-node/register/transpile-only', { paths: [REPO_ROOT] });
  const timeoutMs = options.timeoutMs ?? 25_000;
  const baseEnv: NodeJS.ProcessEnv = { ...process.env, [URL_ENV]: redisUrl() };

  interface Outcome {
    index: number;
    code: number | null;
    signal: NodeJS.Signals | null;
    stdout: string;
    stderr: string;
    error?: Error;
  }

  const children = Array.from({ length: count }, (_, index) => {
    const child = spawn(process.execPath, ['-r', register, scriptPath], {
      cwd: REPO_ROOT,
      env: {
        ...baseEnv,
        REDLIMIT_WORKER_INDEX: String(index),
        REDLIMIT_WORKER_COUNT: String(count),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const done = new Promise<Outcome>((resolve) => {
      let stdout = '';
      let stderr = '';
      let error: Error | undefined;
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.once('error', (e) => (error = e));
      child.once('close', (code, signal) =>
        resolve({ index, code, signal, stdout, stderr, error }),
      );
    });
    return { child, done };
  });

  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    for (const { child } of children) child.kill('SIGKILL');
  }, timeoutMs);

  const outcomes = await Promise.all(children.map((c) => c.done)).finally(() =>
    clearTimeout(timer),
  );

  const failed = outcomes.filter((o) => o.code !== 0);
  if (failed.length > 0) {
    const details = failed
      .map((o) => {
        const how = o.error
          ? `failed to start: ${o.error.message}`
          : o.signal
            ? `killed by ${o.signal}`
            : `exit code ${o.code}`;
        return `worker #${o.index} ${how}\n--- stderr ---\n${o.stderr.trim()}\n--- stdout ---\n${o.stdout.trim()}`;
      })
      .join('\n\n');
    throw new Error(
      `${failed.length}/${count} worker(s) of ${script} failed` +
        (timedOut ? ` (timed out after ${timeoutMs} ms)` : '') +
        `:\n${details}`,
    );
  }
  return outcomes.map((o) => o.stdout.trim());
}
