/**
 * Counts the writes this process hands the kernel on its TCP sockets, per remote port: every call
 * of `net.Socket#_writeGeneric` (one `write` or `writev` of the socket's buffered chunks), which
 * is what a Redis server then reads. Whatever client made the socket (ioredis, node-redis).
 *
 *   const writes = countSocketWrites();
 *   ... // issue commands
 *   writes.to(port);   // writes sent to 127.0.0.1:port since
 *   writes.stop();     // restores net.Socket
 */
import * as net from 'node:net';

type WriteGeneric = (this: net.Socket, ...args: unknown[]) => unknown;

export interface SocketWrites {
  /** Writes to this remote port since counting began. */
  to(port: number): number;
  /** Stops counting (idempotent). */
  stop(): void;
}

export function countSocketWrites(): SocketWrites {
  const proto = net.Socket.prototype as unknown as { _writeGeneric: WriteGeneric };
  const original = proto._writeGeneric;
  if (typeof original !== 'function') throw new Error('net.Socket has no _writeGeneric to count');
  const byPort = new Map<number, number>();
  proto._writeGeneric = function (this: net.Socket, ...args: unknown[]) {
    const port = this.remotePort;
    if (port !== undefined) byPort.set(port, (byPort.get(port) ?? 0) + 1);
    return original.apply(this, args);
  };
  let stopped = false;
  return {
    to: (port) => byPort.get(port) ?? 0,
    stop: () => {
      if (stopped) return;
      stopped = true;
      proto._writeGeneric = original;
    },
  };
}
