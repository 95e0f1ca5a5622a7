import Redis from 'ioredis';
import { startRedisServer, type StartedRedisServer } from './redis';

/** A throwaway redis-server that a spec can freeze (SIGSTOP: it accepts bytes, answers nothing). */
export interface FreezableRedis {
  readonly server: StartedRedisServer;
  /** A client that waits through outages (`maxRetriesPerRequest: null`). */
  readonly client: Redis;
  /** Runs `work` while the server is frozen, and thaws it afterwards whatever happens. */
  whileHung<T>(work: () => Promise<T>): Promise<T>;
  /** Thaws and stops the server, and closes the client. */
  stop(): Promise<void>;
}

/** Starts a server for the spec; call `stop()` in afterAll. */
export async function startFreezableRedis(): Promise<FreezableRedis> {
  const server = await startRedisServer();
  const client = new Redis(server.url, { maxRetriesPerRequest: null });
  const pid = Number(/process_id:(\d+)/.exec(await client.info('server'))![1]);
  return {
    server,
    client,
    async whileHung(work) {
      process.kill(pid, 'SIGSTOP');
      try {
        return await work();
      } finally {
        process.kill(pid, 'SIGCONT');
      }
    },
    async stop() {
      process.kill(pid, 'SIGCONT');
      client.disconnect();
      await server.stop();
    },
  };
}
