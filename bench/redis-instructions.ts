// Instructions redis-server executes per decision, counted exactly by valgrind's callgrind: what a
// change to the Lua scripts or their arguments does to Redis's own work, free of the machine's
// noise (rates and µs on a shared machine spread by tens of percent; these counts repeat to
// within a fraction of a percent).
//
//   npx ts-node --transpile-only bench/redis-instructions.ts [--baseline DIR] [--shapes LIST]
//       [--decisions N] [--redis-server PATH]
//
// Starts `valgrind --tool=callgrind --instr-atstart=no redis-server` on a free port (nothing
// persisted), then per shape: a warm-up pass that gives the callers state (and loads the
// function library), then counts the measured pass only (callgrind_control turns counting on and
// off around it). A shape's figure is the instructions of the command path (reading the request,
// running the command, building the reply; `readQueryFromClient` inclusive: the server's timers
// are left out) divided by its decisions. `--baseline DIR` runs the same shapes with DIR/lib
// (`git archive <rev> lib lua | tar -x -C DIR`, node_modules linked) first, for a before/after
// table. The path figure needs a redis-server with symbols (`--redis-server`, e.g. one built from
// the Debian source package); with the stripped Debian binary, the total (timers included) is
// printed instead.
//
// Shapes: `floor` (one EVALSHA of INCR + PEXPIRE, as bench/compare's floor), then
// `<algorithm>:<keys>:<mode>[:<limit>:<window ms>]`, mode `alone` (coalesce: false, one at a
// time) or `batch` (16 decisions issued together: one coalesced script run). 2,000 callers; a
// limit of 10^6 per hour unless given (sliding-log at most 10^5).
import Redis from 'ioredis';
import type { Algorithm } from '../lib';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseCommandLine, positiveInteger } from './support/cli.util';
import { getFreePort } from '../test/support/redis-server';

type Lib = typeof import('../lib');

const USAGE = `usage: npx ts-node --transpile-only bench/redis-instructions.ts [--baseline DIR]
  [--shapes floor,fixed-window:1:alone,...] [--decisions 100] [--redis-server redis-server]`;

const DEFAULT_SHAPES = [
  'floor',
  'fixed-window:1:alone',
  'fixed-window:1:batch',
  'fixed-window:2:batch',
  'sliding-window:1:batch',
  'token-bucket:1:batch',
  'gcra:1:batch',
  'sliding-log:1:batch:100000:3600000',
];

const CALLERS = 2_000;
const BATCH = 16;

interface Counted {
  readonly path: number | undefined;
  readonly total: number;
}

async function main(): Promise<void> {
  const args = parseCommandLine(USAGE, {
    baseline: { type: 'string' },
    shapes: { type: 'string' },
    decisions: { type: 'string' },
    'redis-server': { type: 'string' },
  });
  const shapes = args.shapes ? args.shapes.split(',') : DEFAULT_SHAPES;
  const rounds = args.decisions ? positiveInteger(args.decisions, 'decisions', USAGE) : 100;
  const server = args['redis-server'] ?? 'redis-server';
  const dir = mkdtempSync(join(tmpdir(), 'redlimit-callgrind-'));
  const port = await getFreePort();
  const valgrind = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      `--callgrind-out-file=${join(dir, 'cg.%p')}`,
      server,
      '--port',
      String(port),
      '--save',
      '',
      '--appendonly',
      'no',
    ],
    { stdio: 'ignore' },
  );
  const pid = String(valgrind.pid);
  const client = new Redis({ port, lazyConnect: true, retryStrategy: () => 200 });
  try {
    // One connect: the client retries by itself (a second connect() while it does is an error);
    // valgrind can take seconds to start redis-server on a busy machine.
    client.on('error', () => undefined);
    client.connect().catch(() => undefined);
    for (let i = 0; client.status !== 'ready'; i++) {
      if (i > 300) throw new Error(`redis-server under valgrind did not answer on port ${port}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    await client.ping();
    const builds: Array<{ name: string; lib: Lib }> = [];
    if (args.baseline) builds.push({ name: 'baseline', lib: load(resolve(args.baseline, 'lib')) });
    builds.push({ name: 'this checkout', lib: load(resolve(__dirname, '..', 'lib')) });
    const rows: string[][] = [];
    for (const shape of shapes) {
      const row = [shape];
      for (const build of builds) {
        const counted = await measure(client, build.lib, shape, rounds, dir, pid);
        row.push(format(counted));
      }
      rows.push(row);
      console.error(row.join('  '));
    }
    const header = ['shape', ...builds.map((b) => `${b.name}: instructions per decision`)];
    console.log(`| ${header.join(' | ')} |`);
    console.log(`| ${header.map(() => '---').join(' | ')} |`);
    for (const row of rows) console.log(`| ${row.join(' | ')} |`);
  } finally {
    client.disconnect();
    valgrind.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

function load(libDir: string): Lib {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- chosen at run time (A/B)
  return require(libDir) as Lib;
}

function format({ path, total }: Counted): string {
  return path === undefined
    ? `${Math.round(total).toLocaleString('en')} (total)`
    : Math.round(path).toLocaleString('en');
}

async function measure(
  client: Redis,
  lib: Lib,
  shape: string,
  rounds: number,
  dir: string,
  pid: string,
): Promise<Counted> {
  const run = decider(client, lib, shape);
  const batch = shape.includes(':batch') ? BATCH : 1;
  const pass = async () => {
    for (let r = 0; r < rounds; r++) {
      await Promise.all(Array.from({ length: batch }, (_, j) => run((r * batch + j) % CALLERS)));
    }
  };
  await pass(); // the callers' state exists, the library is loaded
  callgrind(pid, '-z');
  callgrind(pid, '-i', 'on');
  await pass();
  callgrind(pid, '-i', 'off');
  callgrind(pid, '-d');
  const file = readdirSync(dir)
    .map((f) => join(dir, f))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0]!; // the dump just written
  const decisions = rounds * batch;
  const annotated = execFileSync('callgrind_annotate', ['--inclusive=yes', file], {
    maxBuffer: 1 << 28,
  }).toString();
  const total = Number(/^totals:\s+(\d+)/m.exec(readFileSync(file, 'utf8'))?.[1] ?? NaN);
  const path = /^\s*([\d,]+) .*networking\.c:readQueryFromClient /m.exec(annotated)?.[1];
  return {
    total: total / decisions,
    path: path === undefined ? undefined : Number(path.replace(/,/g, '')) / decisions,
  };
}

function callgrind(pid: string, ...args: string[]): void {
  execFileSync('callgrind_control', [...args, pid], { stdio: 'ignore' });
}

function decider(client: Redis, lib: Lib, shape: string): (caller: number) => Promise<unknown> {
  if (shape === 'floor') {
    const lua = "redis.call('INCR', KEYS[1]) redis.call('PEXPIRE', KEYS[1], ARGV[1]) return 1";
    let sha: string | undefined;
    return async (i) => {
      sha ??= (await client.script('LOAD', lua)) as string;
      return client.evalsha(sha, 1, `floor:${i}`, 3_600_000);
    };
  }
  const [algorithm, keys, mode, limit, window] = shape.split(':');
  if (!algorithm || !['1', '2'].includes(keys ?? '') || !['alone', 'batch'].includes(mode ?? '')) {
    throw new Error(`unknown shape ${shape}: <algorithm>:<1|2>:<alone|batch>[:<limit>:<window>]`);
  }
  const store = new lib.RedisStore({
    client,
    prefix: `cg:${shape}:${Date.now()}`,
    coalesce: mode === 'batch',
  });
  const limiter = new lib.Limiter(store, {
    name: 'p',
    algorithm: algorithm as Algorithm,
    limit: Number(limit ?? 1_000_000),
    window: Number(window ?? 3_600_000),
  });
  return async (i) => {
    const decision = await limiter.consume(keys === '1' ? `ip:${i}` : [`ip:${i}`, `email:${i}`]);
    if (!decision.allowed || decision.failure) {
      throw new Error(`${shape}: a decision was refused or failed (${decision.failure?.reason})`);
    }
    return decision;
  };
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
