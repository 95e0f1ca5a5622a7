/**
 * The ioredis port's direct FCALL (the client's own `Command` + `sendCommand`) against `call()` on
 * the same clients: replies, errors (script-runner's regexes read their messages), MONITOR's view
 * of the command, and clients that are not connected yet, reconnecting, or refuse offline queueing.
 */
import Redis, { type RedisOptions } from 'ioredis';
import IoValkey from 'iovalkey';
import { IoredisPort } from '../../lib/stores/clients/ioredis.port';
import { redisUrl, uniquePrefix } from '../support/redis';

const LIB = `#!lua name=reviewdirect${process.pid}
redis.register_function('rd_echo', function(keys, args)
  local out = {}
  for i = 1, #keys do out[#out + 1] = #keys[i] end
  for i = 1, #args do out[#out + 1] = tonumber(args[i]) or -1 end
  return out
end)
redis.register_function('rd_err', function(keys, args) return redis.error_reply('ERR rd boom ' .. (args[1] or '')) end)
redis.register_function('rd_str', function(keys, args) return {keys[1], args[1]} end)
`;

type Outcome = { ok: unknown } | { err: { name: string; message: string; ctor: string } };
const outcome = (p: Promise<unknown>): Promise<Outcome> =>
  p.then(
    (ok) => ({ ok }),
    (e: Error) => ({ err: { name: e.name, message: e.message, ctor: e.constructor.name } }),
  );

describe('ioredis port: the direct FCALL answers as call() does', () => {
  const clients: Array<{ quit(): Promise<unknown>; disconnect(): void }> = [];
  const make = (options: RedisOptions = {}, valkey = false): Redis => {
    const Valkey = IoValkey as unknown as new (url: string, options: RedisOptions) => Redis;
    const c = valkey ? new Valkey(redisUrl(), options) : new Redis(redisUrl(), options);
    clients.push(c);
    return c;
  };
  let admin: Redis;
  beforeAll(async () => {
    admin = make();
    await admin.call('function', 'load', 'replace', LIB);
  });
  afterAll(() => {
    for (const c of clients) c.disconnect();
  });

  const viaCall = (c: Redis, fn: string, keys: string[], args: Array<string | number>) =>
    c.call('fcall', [fn, keys.length, ...keys, ...args]);
  const viaPort = (c: Redis, fn: string, keys: string[], args: Array<string | number>) =>
    new IoredisPort(c).fcall(fn, keys, args);

  const cases: Array<[string, string[], Array<string | number>]> = [
    ['rd_echo', ['a', 'ключ', '{x}:y'], [1, -0, 2 ** 53, 1.5, 'NaN', '', 1e21]],
    ['rd_err', ['a'], ['x']],
    ['rd_str', ['k\u0000z'], ['é']],
    ['rd_missing', ['a'], []],
  ];

  it.each([
    ['ioredis', {}, false],
    ['ioredis showFriendlyErrorStack', { showFriendlyErrorStack: true }, false],
    ['iovalkey', {}, true],
  ] as const)('%s: replies and errors are the same', async (_, options, valkey) => {
    const c = make(options, valkey);
    for (const [fn, keys, args] of cases) {
      expect(await outcome(viaPort(c, fn, keys, args))).toEqual(
        await outcome(viaCall(c, fn, keys, args)),
      );
    }
  });

  it('a plain client takes the direct path (call() is not used)', async () => {
    const c = make();
    const call = jest.spyOn(c, 'call');
    await viaPort(c, 'rd_echo', ['a'], [1]);
    expect(call).not.toHaveBeenCalled();
    c.options.keyPrefix = 'x:';
    await viaPort(c, 'rd_echo', ['a'], [1]);
    expect(call).toHaveBeenCalledTimes(1);
  });

  it('MONITOR sees the same command from both', async () => {
    const c = make();
    await c.ping();
    const monitor = await make().monitor();
    // ioredis can report a monitor line that races its own disconnect or setup as a "Command
    // queue state error" on this side connection; it observes only, so its errors are not the
    // test's (the assertions below still need both commands seen).
    monitor.on('error', () => undefined);
    // MONITOR sees every client of this Redis (other spec files run beside this one): only this
    // test's own command counts, told apart by a key no one else sends.
    const marker = `${uniquePrefix('monitor')}:k`;
    const seen: string[][] = [];
    monitor.on('monitor', (_t: string, args: string[]) => {
      if (/^fcall$/i.test(args[0] ?? '') && args.includes(marker)) seen.push(args);
    });
    const [fn, caseKeys, args] = cases[0]!;
    const keys = [...caseKeys, marker];
    await viaCall(c, fn, keys, args);
    await viaPort(c, fn, keys, args);
    await c.ping();
    await new Promise((r) => setTimeout(r, 50));
    monitor.disconnect();
    expect(seen).toHaveLength(2);
    expect(seen[1]).toEqual(seen[0]);
  });

  it('lazyConnect (status wait), issued before connecting: both connect and answer', async () => {
    const [fn, keys, args] = cases[0]!;
    const a = make({ lazyConnect: true });
    const b = make({ lazyConnect: true });
    expect(await outcome(viaPort(a, fn, keys, args))).toEqual(
      await outcome(viaCall(b, fn, keys, args)),
    );
  });

  it('enableOfflineQueue false while not connected: the same refusal', async () => {
    const [fn, keys, args] = cases[0]!;
    const a = make({ lazyConnect: true, enableOfflineQueue: false });
    const b = make({ lazyConnect: true, enableOfflineQueue: false });
    expect(await outcome(viaPort(a, fn, keys, args))).toEqual(
      await outcome(viaCall(b, fn, keys, args)),
    );
  });

  it('a keyPrefix set after construction is applied (options read per call)', async () => {
    const prefix = uniquePrefix('rd');
    const c = make();
    await c.ping();
    c.options.keyPrefix = `${prefix}:`;
    const reply = (await viaPort(c, 'rd_str', ['k'], ['v'])) as string[];
    expect(reply).toEqual([`${prefix}:k`, 'v']);
  });

  it('while reconnecting (offline queue): both are answered after the reconnect', async () => {
    const [fn, keys, args] = cases[0]!;
    const c = make({ retryStrategy: () => 20 });
    await c.ping();
    const id = await c.client('ID');
    await admin.client('KILL', 'ID', String(id));
    await new Promise((r) => setTimeout(r, 5));
    const [p, q] = await Promise.all([
      outcome(viaPort(c, fn, keys, args)),
      outcome(viaCall(c, fn, keys, args)),
    ]);
    expect(p).toEqual(q);
  });

  it('the script-runner regex sees a missing function on the direct path', async () => {
    const c = make();
    const r = await outcome(viaPort(c, 'rd_missing', ['a'], []));
    expect('err' in r && /^ERR Function not found/i.test(r.err.message)).toBe(true);
  });
});
