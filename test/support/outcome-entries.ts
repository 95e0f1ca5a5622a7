// The outcome markers a prefix holds (see lua/lib/outcome.lua): one hash per process and Cluster
// slot, `<prefix>{<slot tag>}!<process tag>`, a field per run that allowed a spend, an entry per
// allowed spend. Listed as `<field>#<place>`, sorted.
import type Redis from 'ioredis';

/** Minimal client surface: what the helpers read. */
type Reader = Pick<Redis, 'keys' | 'type' | 'hgetall'>;

/** Every allowed spend's entry under `prefix`, as `<field>#<place>`. */
export async function outcomeEntries(client: Reader, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for (const key of await client.keys(`${prefix}*}!*`)) {
    if ((await client.type(key)) !== 'hash') continue;
    for (const [field, value] of Object.entries(await client.hgetall(key))) {
      for (const entry of value.split(';').slice(1)) out.push(`${field}#${/^\d+/.exec(entry)![0]}`);
    }
  }
  return out.sort();
}

/** The outcome hashes under `prefix` (keys). */
export async function outcomeHashes(client: Reader, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for (const key of await client.keys(`${prefix}*}!*`)) {
    if ((await client.type(key)) === 'hash') out.push(key);
  }
  return out.sort();
}
