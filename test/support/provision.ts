/**
 * Provisioning of the ONE Redis shared by a whole Jest run (see global-setup.ts).
 *
 * Order:
 *   a. REDIS_URL set            -> used as is (checked with a PING);
 *   b. a Docker engine answers  -> redis:7.2-alpine through testcontainers;
 *   c. otherwise                -> a redis-server spawned on a free port.
 *
 * REDLIMIT_TEST_REDIS=spawn|docker forces (c) or (b) (default: auto).
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnRedisServer, sweepStaleServers, type SpawnedRedisServer } from './redis-server';

export const URL_ENV = 'REDLIMIT_TEST_REDIS_URL';

interface StoppableContainer {
  stop(): Promise<unknown>;
}

export interface ProvisionedRedis {
  kind: 'external' | 'docker' | 'spawned';
  url: string;
  container?: StoppableContainer;
  server?: SpawnedRedisServer;
}

const HANDLE_KEY = '__REDLIMIT_TEST_REDIS__';

type HandleHolder = { [HANDLE_KEY]?: ProvisionedRedis };

export function setHandle(h: ProvisionedRedis | undefined): void {
  (globalThis as HandleHolder)[HANDLE_KEY] = h;
}

export function getHandle(): ProvisionedRedis | undefined {
  return (globalThis as HandleHolder)[HANDLE_KEY];
}

function log(msg: string): void {
  if (process.env.REDLIMIT_TEST_QUIET) return;
  process.stderr.write(`[redlimit test harness] ${msg}\n`);
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/** PING a redis:// URL with a raw socket (no client library, no retries). */
function pingUrl(url: string, timeoutMs = 5_000): Promise<void> {
  const u = new URL(url);
  const tls = u.protocol === 'rediss:';
  if (tls) return Promise.resolve(); // not worth a TLS probe; the client will tell
  const port = Number(u.port || 6379);
  const host = u.hostname || '127.0.0.1';
  const auth = u.password
    ? `AUTH ${u.username ? `${decodeURIComponent(u.username)} ` : ''}${decodeURIComponent(u.password)}\r\n`
    : '';
  return new Promise((resolve, reject) => {
    let buf = '';
    const sock = net.connect({ port, host });
    const fail = (why: string): void => {
      sock.destroy();
      reject(new Error(`REDIS_URL=${u.host}: ${why}`));
    };
    sock.setTimeout(timeoutMs, () => fail(`no answer to PING within ${timeoutMs} ms`));
    sock.once('error', (e) => fail(e.message));
    sock.once('connect', () => sock.write(`${auth}PING\r\n`));
    sock.on('data', (d: Buffer) => {
      buf += d.toString('utf8');
      if (buf.includes('+PONG')) {
        sock.destroy();
        resolve();
      } else if (buf.startsWith('-')) {
        fail(buf.trim());
      }
    });
  });
}

/** Cheap, silent check whether it is worth asking testcontainers for a runtime at all. */
function dockerMightBeThere(): boolean {
  if (process.env.DOCKER_HOST) return true;
  if (Object.keys(process.env).some((k) => k.startsWith('TESTCONTAINERS_'))) return true;
  const home = os.homedir();
  const candidates = [
    '/var/run/docker.sock',
    '/run/docker.sock',
    path.join(home, '.docker/run/docker.sock'),
    path.join(home, '.docker/desktop/docker.sock'),
    path.join(home, '.testcontainers.properties'),
  ];
  if (process.env.XDG_RUNTIME_DIR) {
    candidates.push(path.join(process.env.XDG_RUNTIME_DIR, 'docker.sock'));
    candidates.push(path.join(process.env.XDG_RUNTIME_DIR, 'podman/podman.sock'));
  }
  if (typeof process.getuid === 'function') {
    candidates.push(`/run/user/${process.getuid()}/docker.sock`);
  }
  return candidates.some((p) => fs.existsSync(p));
}

async function tryDocker(required: boolean): Promise<ProvisionedRedis | undefined> {
  if (!required && !dockerMightBeThere()) return undefined;
  try {
    const tc = await import('testcontainers');
    await withTimeout(tc.getContainerRuntimeClient(), 8_000, 'container runtime detection');
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    if (required) {
      throw new Error(`REDLIMIT_TEST_REDIS=docker but no Docker engine answers: ${why}`, {
        cause: e,
      });
    }
    log(`no usable Docker engine (${why}); spawning redis-server`);
    return undefined;
  }
  const { GenericContainer, Wait } = await import('testcontainers');
  const container = await new GenericContainer('redis:7.2-alpine')
    .withCommand([
      'redis-server',
      '--save',
      '',
      '--appendonly',
      'no',
      '--enable-debug-command',
      'yes',
      '--notify-keyspace-events',
      '',
    ])
    .withExposedPorts(6379)
    .withWaitStrategy(Wait.forLogMessage(/Ready to accept connections/))
    .withStartupTimeout(120_000)
    .start();
  const url = `redis://${container.getHost()}:${container.getMappedPort(6379)}`;
  return { kind: 'docker', url, container };
}

export async function provisionRedis(): Promise<ProvisionedRedis> {
  const external = process.env.REDIS_URL;
  if (external) {
    await pingUrl(external);
    return { kind: 'external', url: external };
  }
  const mode = (process.env.REDLIMIT_TEST_REDIS ?? 'auto').toLowerCase();
  if (mode !== 'spawn') {
    const docker = await tryDocker(mode === 'docker');
    if (docker) return docker;
  }
  sweepStaleServers();
  const server = await spawnRedisServer();
  return { kind: 'spawned', url: server.url, server };
}

export async function releaseRedis(h: ProvisionedRedis | undefined): Promise<void> {
  if (!h) return;
  if (h.server) await h.server.stop();
  if (h.container) await h.container.stop();
}

export function describeRedis(h: ProvisionedRedis): string {
  switch (h.kind) {
    case 'external':
      return `using REDIS_URL (${new URL(h.url).host})`;
    case 'docker':
      return `started redis:7.2-alpine container at ${h.url}`;
    case 'spawned':
      return `spawned redis-server pid ${h.server?.pid} at ${h.url}`;
  }
}

export { log };
