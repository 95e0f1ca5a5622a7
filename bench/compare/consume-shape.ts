/**
 * The shape of one redlimit decision on the wire, and a floor that has the same shape but does
 * only the floor's work: what the protocol costs (more keys, more arguments, a longer reply), told
 * apart from what redlimit's Lua costs.
 *
 * The shape is not written down here: {@link captureConsumeShape} sends one real fixed-window
 * consume (one caller key, `coalesce: false`, so it is one script run on its own) and records the
 * call ioredis sends (EVALSHA or FCALL, the KEYS, the ARGV as sent) and the length of the reply.
 * So when the store's ARGV or reply layout changes, the shaped floor follows. When this was
 * written it was 2 KEYS (the state key, the caller's refund ledger), 10 ARGV (now, expiry offset,
 * cost, mode, spend id, deadline, L, then limit, window, burst) and a reply of 9 + K numbers
 * (K = caller keys), per lua/lib/consume-frame.lua; the results file prints what it was.
 */
import type Redis from 'ioredis';
import { Limiter, RedisStore } from '../../lib';

export interface ConsumeShape {
  /** How redlimit sent it: a script (EVALSHA, or EVAL when not loaded yet) or a function. */
  readonly command: 'evalsha' | 'fcall';
  /** The KEYS of the call, with the caller key replaced by {@link CALLER}. */
  readonly keys: readonly string[];
  /** The ARGV as sent. */
  readonly args: ReadonlyArray<string | number>;
  /** Numbers in the reply. */
  readonly replyLength: number;
}

/** The caller key the capture is made with; captured key names hold it in their hash tag. */
export const CALLER = 'ip:shape-probe';

interface SentCommand {
  readonly name: string;
  readonly args: ReadonlyArray<string | number | Buffer>;
  readonly promise: Promise<unknown>;
}

/** Sends one fixed-window consume for {@link CALLER} and returns the script call it made. */
export async function captureConsumeShape(client: Redis, prefix: string): Promise<ConsumeShape> {
  const store = new RedisStore({ client, prefix, coalesce: false });
  const limiter = new Limiter(store, {
    name: 'shape',
    algorithm: 'fixed-window',
    limit: 1_000_000,
    window: 3_600_000,
  });
  await limiter.peek(CALLER); // whatever the store does once (clock probe, script load) happens now
  const sent: SentCommand[] = [];
  const target = client as unknown as { sendCommand: (command: SentCommand) => unknown };
  const original = target.sendCommand;
  target.sendCommand = function (this: unknown, command: SentCommand) {
    sent.push(command);
    return original.call(this, command);
  };
  try {
    await limiter.consume(CALLER);
  } finally {
    target.sendCommand = original;
  }
  const scripts = sent.filter((c) => ['evalsha', 'eval', 'fcall'].includes(c.name));
  if (scripts.length !== 1) {
    throw new Error(
      `expected one script call for a fixed-window consume, saw: ${sent.map((c) => c.name).join(', ')}`,
    );
  }
  const call = scripts[0]!;
  const numberOfKeys = Number(call.args[1]);
  const keys = call.args.slice(2, 2 + numberOfKeys).map(String);
  const args = call.args
    .slice(2 + numberOfKeys)
    .map((a) => (typeof a === 'number' ? a : String(a)));
  const reply = await call.promise;
  if (!Array.isArray(reply)) throw new Error('a consume script answered with no array');
  // (the process's outcome hash, `<prefix>{…}!<process tag>`, is the same key for every caller)
  if (!keys.every((key) => key.includes(`{${CALLER}}`) || key.includes('}!'))) {
    throw new Error(`captured keys do not carry the caller key as hash tag: ${keys.join(' ')}`);
  }
  return {
    command: call.name === 'fcall' ? 'fcall' : 'evalsha',
    keys: keys.map((key) => key.split(CALLER).join('\u0000')),
    args,
    replyLength: reply.length,
  };
}

/** The shape's KEYS for caller key `key`. */
export function shapedKeys(shape: ConsumeShape, key: string): string[] {
  return shape.keys.map((k) => k.split('\u0000').join(key));
}

/** The shaped floor, ready to call: one call per decision with a caller's shaped KEYS. */
export interface ShapedFloor {
  call(keys: readonly string[]): Promise<unknown>;
  /** Removes what was loaded on the server (the Functions library, when there is one). */
  dispose(): Promise<void>;
}

/**
 * The shaped floor on `client`, sent the way redlimit sent its call: as `FCALL` of a function in
 * a library of its own (loaded here) when the capture saw FCALL, else as EVALSHA of a script. It
 * reads Redis TIME when ARGV[1] is empty (as redlimit's prelude does), runs INCR and PEXPIRE on
 * the first key and replies with as many numbers as redlimit; the other KEYS and ARGV are sent
 * and parsed, not used.
 */
export async function shapedFloor(client: Redis, shape: ConsumeShape): Promise<ShapedFloor> {
  const rest = Array.from({ length: Math.max(0, shape.replyLength - 2) }, () => '0').join(', ');
  const body = (keys: string, argv: string) =>
    [
      `if ${argv}[1] == '' then redis.call('TIME') end`,
      `local n = redis.call('INCR', ${keys}[1])`,
      `redis.call('PEXPIRE', ${keys}[1], 3600000)`,
      `return { 1, n${rest ? `, ${rest}` : ''} }`,
    ].join('\n');
  const args = shape.args;
  if (shape.command === 'fcall') {
    await client.call(
      'FUNCTION',
      'LOAD',
      'REPLACE',
      `#!lua name=${LIBRARY}\nredis.register_function('${FUNCTION}', function(keys, argv)\n` +
        `${body('keys', 'argv')}\nend)`,
    );
    return {
      call: (keys) => client.call('fcall', FUNCTION, keys.length, ...keys, ...args),
      dispose: async () => {
        await client.call('FUNCTION', 'DELETE', LIBRARY);
      },
    };
  }
  client.defineCommand('benchShapedFloor', { lua: body('KEYS', 'ARGV') });
  const command = (client as unknown as Record<string, ScriptCommand>).benchShapedFloor!;
  return {
    call: (keys) => command.call(client, keys.length, ...keys, ...args),
    dispose: async () => {},
  };
}

const LIBRARY = 'redlimit_bench';
const FUNCTION = 'redlimit_bench_shaped_floor';
type ScriptCommand = (numberOfKeys: number, ...args: Array<string | number>) => Promise<unknown>;

/** One line for the results file. */
export function describeShape(shape: ConsumeShape): string {
  return (
    `${shape.command === 'fcall' ? 'FCALL' : 'EVALSHA'} with ${shape.keys.length} KEYS, ${shape.args.length} ARGV ` +
    `(${shape.args.map((a) => (a === '' ? "''" : String(a))).join(', ')}), ` +
    `a reply of ${shape.replyLength} numbers`
  );
}
