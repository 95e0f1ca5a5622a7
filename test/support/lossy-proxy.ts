import * as net from 'node:net';
import Redis from 'ioredis';
import { startRedisServer, type StartedRedisServer } from './redis';

/**
 * A TCP proxy to Redis that can lose what crosses it, the way a broken connection does: the next
 * reply (the command ran; its answer goes with the connection), or the next request (it never
 * reaches Redis; the connection goes too). Each client connection gets its own upstream one.
 */
export interface LossyProxy {
  readonly port: number;
  /** The next reply chunk from Redis is dropped and that connection closed. */
  dropNextReply(): void;
  /** The next request chunk to Redis is dropped and that connection closed. */
  dropNextRequest(): void;
  /** An outage: every connection is cut, and new ones are cut as they come, until {@link up}. */
  down(): void;
  /** The outage is over: connections get through again. */
  up(): void;
  close(): Promise<void>;
}

export async function lossyProxy(redisPort: number): Promise<LossyProxy> {
  let dropReply = false;
  let dropRequest = false;
  let isDown = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (isDown) return void client.destroy();
    const upstream = net.connect(redisPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    const cut = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (d) => {
      if (!dropRequest) return void upstream.write(d);
      dropRequest = false;
      cut(); // the command never reaches Redis
    });
    upstream.on('data', (d) => {
      if (!dropReply) return void client.write(d);
      dropReply = false;
      cut(); // the command ran; its answer is lost with the connection
    });
    client.on('error', cut);
    upstream.on('error', cut);
    client.on('close', () => {
      upstream.destroy();
      sockets.delete(client);
    });
    upstream.on('close', () => {
      client.destroy();
      sockets.delete(upstream);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    dropNextReply: () => void (dropReply = true),
    dropNextRequest: () => void (dropRequest = true),
    down: () => {
      isDown = true;
      for (const s of sockets) s.destroy();
    },
    up: () => void (isDown = false),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A private redis-server, a client to look at it, and a fresh lossy proxy to it per test. */
export interface ProxiedServer {
  readonly server: StartedRedisServer;
  /** A direct client (not through the proxy). */
  readonly check: Redis;
  /** This test's proxy (closed after it). */
  readonly proxy: LossyProxy;
  /** Clients of this test, disconnected after it. */
  readonly open: Redis[];
}

/**
 * Registers (inside a `describe`) a private redis-server for the block, a direct client to it,
 * and a lossy proxy per test; what the test put in `open` is disconnected after it.
 */
export function proxiedServer(): ProxiedServer {
  let server: StartedRedisServer | undefined;
  let check: Redis | undefined;
  let proxy: LossyProxy | undefined;
  const open: Redis[] = [];
  beforeAll(async () => {
    server = await startRedisServer();
    check = new Redis(server.url);
  });
  afterAll(async () => {
    check?.disconnect();
    await server?.stop();
  });
  beforeEach(async () => {
    proxy = await lossyProxy(server!.port);
  });
  afterEach(async () => {
    for (const c of open.splice(0)) c.disconnect();
    await proxy?.close();
  });
  return {
    get server() {
      return server!;
    },
    get check() {
      return check!;
    },
    get proxy() {
      return proxy!;
    },
    open,
  };
}
