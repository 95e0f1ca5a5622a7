// How long a live override takes to be in force on other processes (docs/live-limits.md):
//
//   npx ts-node --transpile-only bench/overrides-propagation.ts [--processes 3] [--changes 40]
//     [--poll-ms 500] [--redis URL]
//
// Starts `--processes` Node processes, each with its own RedisStore and PolicyOverrides polling the
// store every `--poll-ms`, and a limiter whose policy the parent overrides `--changes` times (a
// limit each time), spaced by a random part of the poll interval so changes land anywhere in it.
// Each process reports when the change is in force there (its PolicyOverrides' onChange, on its
// Date.now()); the delay is from just before the parent's write. All processes share one machine
// clock. Prints p50 / p99 / max per process and over all, in ms.
import { fork } from 'node:child_process';
import { parseArgs } from 'node:util';
import Redis from 'ioredis';
import { PolicyOverrides, RedisStore, Limiter } from '../lib';
import { resolvePolicy } from '../lib/core/policy';
import { benchRedis } from './support/redis.util';

const POLICY = { name: 'api', algorithm: 'fixed-window', limit: 100, window: '1m' } as const;

interface Seen {
  readonly worker: number;
  readonly version: number;
  readonly at: number;
}

async function worker(): Promise<void> {
  const client = new Redis(process.env.BENCH_REDIS_URL!);
  const store = new RedisStore({ client, prefix: process.env.BENCH_PREFIX! });
  const overrides = new PolicyOverrides(store.overrides(), {
    pollMs: Number(process.env.BENCH_POLL_MS),
    onChange: (_inForce, version) =>
      process.send!({ worker: Number(process.env.BENCH_WORKER), version, at: Date.now() }),
  });
  // A limiter under the overrides, deciding now and then, as an app would.
  const limiter = new Limiter(store, POLICY, { overrides });
  await overrides.start();
  const busy = setInterval(() => void limiter.consume('caller').catch(() => undefined), 50);
  process.send!({ worker: Number(process.env.BENCH_WORKER), version: -1, at: Date.now() });
  process.on('message', () => {
    clearInterval(busy);
    overrides.stop();
    client.disconnect();
    process.exit(0);
  });
}

function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      processes: { type: 'string', default: '3' },
      changes: { type: 'string', default: '40' },
      'poll-ms': { type: 'string', default: '500' },
      redis: { type: 'string' },
    },
  });
  const processes = Number(values.processes);
  const changes = Number(values.changes);
  const pollMs = Number(values['poll-ms']);
  const redis = await benchRedis(values.redis);
  const prefix = `bench-ov:${Date.now()}:`;
  const seen: Seen[] = [];
  const children = Array.from({ length: processes }, (_, i) =>
    fork(__filename, [], {
      env: {
        ...process.env,
        BENCH_OVERRIDES_WORKER: '1',
        BENCH_WORKER: String(i),
        BENCH_REDIS_URL: redis.url,
        BENCH_PREFIX: prefix,
        BENCH_POLL_MS: String(pollMs),
      },
      execArgv: ['-r', 'ts-node/register/transpile-only'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  const ready = new Set<number>();
  for (const child of children) {
    child.on('message', (message: Seen) => {
      if (message.version === -1) ready.add(message.worker);
      else seen.push(message);
    });
  }
  while (ready.size < processes) await new Promise((resolve) => setTimeout(resolve, 20));

  const client = new Redis(redis.url);
  const writer = new PolicyOverrides(new RedisStore({ client, prefix }).overrides());
  const base = resolvePolicy(POLICY);
  const delays: number[][] = children.map(() => []);
  for (let i = 0; i < changes; i++) {
    await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * pollMs)));
    const before = Date.now();
    const { version } = await writer.set(base, { limit: 200 + i }, { actor: 'bench' });
    const end = Date.now() + 10 * pollMs + 5_000;
    while (
      children.some((_, w) => !seen.some((s) => s.worker === w && s.version >= version)) &&
      Date.now() < end
    ) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    children.forEach((_, w) => {
      const first = seen.find((s) => s.worker === w && s.version >= version);
      if (first) delays[w]!.push(first.at - before);
    });
  }
  for (const child of children) child.send('stop');
  client.disconnect();
  await redis.stop();

  const line = (name: string, xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    return `| ${name} | ${sorted.length} | ${quantile(sorted, 0.5)} | ${quantile(sorted, 0.99)} | ${sorted[sorted.length - 1]} |`;
  };
  console.log(
    `${changes} changes, ${processes} processes polling every ${pollMs} ms; ms from just before the write to in force`,
  );
  console.log('| process | changes seen | p50 | p99 | max |');
  console.log('| --- | ---: | ---: | ---: | ---: |');
  delays.forEach((xs, w) => console.log(line(String(w + 1), xs)));
  console.log(line('all', delays.flat()));
}

if (process.env.BENCH_OVERRIDES_WORKER) {
  void worker();
} else {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
