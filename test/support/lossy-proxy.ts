import * as net from 'node:net';

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
