/**
 * Cross-process barrier over Redis, so that N OS processes (or N clients)
 * start racing at the same instant.
 *
 * Each party INCRs `<name>:arrived`; the last one to arrive RPUSHes `parties`
 * tokens onto `<name>:go`; every party (the last one included) then BLPOPs one
 * token. Redis wakes all blocked clients in the same event-loop turn, so all
 * parties are released together.
 *
 * BLPOP blocks the connection: use a client that nothing else is using at that
 * moment (e.g. a worker's own client, or a dedicated one per party in-process).
 * Use a unique `name` per barrier (e.g. built with uniquePrefix()); keys expire
 * on their own after a minute.
 */
import type Redis from 'ioredis';

export async function barrier(
  client: Redis,
  name: string,
  parties: number,
  timeoutMs = 15_000,
): Promise<void> {
  if (!Number.isInteger(parties) || parties < 1) {
    throw new Error(`barrier(${name}): parties must be a positive integer, got ${parties}`);
  }
  const arrivedKey = `${name}:arrived`;
  const goKey = `${name}:go`;
  const ttlMs = Math.max(60_000, timeoutMs * 2);

  const arrived = await client.incr(arrivedKey);
  if (arrived === 1) await client.pexpire(arrivedKey, ttlMs);
  if (arrived > parties) {
    throw new Error(`barrier(${name}): ${arrived} arrivals for ${parties} parties (name reused?)`);
  }
  if (arrived === parties) {
    await client
      .multi()
      .rpush(goKey, ...Array.from({ length: parties }, () => '1'))
      .pexpire(goKey, ttlMs)
      .exec();
  }
  const res = await client.blpop(goKey, timeoutMs / 1000);
  if (res === null) {
    const now = await client.get(arrivedKey);
    throw new Error(
      `barrier(${name}): timed out after ${timeoutMs} ms with ${now ?? '?'}/${parties} parties arrived`,
    );
  }
}
