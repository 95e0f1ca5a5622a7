// Where an app's CPU per request goes: each bench/http-app.ts variant under V8's CPU profiler
// (started after a warm-up, over IPC), loaded by autocannon, its profile's self time summed by where the code lives (redlimit's Nest
// layer, its core and stores, Nest, the HTTP framework, ioredis, Node) and by function, per
// request. A diagnostic beside `npm run bench:http` (which measures the totals), not a benchmark:
// the profiler itself costs CPU, so read the shares, and compare runs of one session only.
//
//   npx ts-node --transpile-only bench/http-profile.ts [--platforms express,fastify]
//     [--variants bare,redlimit,attempt,default] [--duration 8] [--baseline DIR] [--top 25]
//
// `--baseline DIR` profiles the redlimit variants on DIR/lib/nest too (as `bench:http` does).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { AppMessage, Platform, Variant } from './http-app';
import { benchRedis } from './support/redis.util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const ROOT = join(__dirname, '..');

/** Where a frame's code lives. */
function area(url: string, baseline?: string): string {
  const path = url.replace(/^file:\/\//, '');
  if (baseline && path.startsWith(baseline)) return area(join(ROOT, relative(baseline, path)));
  if (path.startsWith(join(ROOT, 'lib', 'nest'))) return 'redlimit lib/nest';
  if (path.startsWith(join(ROOT, 'lib'))) return 'redlimit core + stores';
  if (path.includes('node_modules/@nestjs/')) return 'nest';
  if (path.includes('node_modules/ioredis') || path.includes('node_modules/redis-parser')) {
    return 'ioredis';
  }
  if (/node_modules\/(fastify|find-my-way|light-my-request|avvio|@fastify)/.test(path)) {
    return 'fastify';
  }
  if (/node_modules\/(express|router|body-parser|send|finalhandler|path-to-regexp)/.test(path)) {
    return 'express';
  }
  if (path.includes('node_modules/rxjs')) return 'rxjs';
  if (path.includes('node_modules/')) return 'other packages';
  if (path.startsWith('node:') || path === '' || !path.startsWith('/')) return 'node + gc + idle';
  return 'other';
}

function summarise(profile: Profile, requests: number, top: number, baseline?: string) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + profile.timeDeltas[i]!));
  const areas = new Map<string, number>();
  const functions = new Map<string, number>();
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === '(idle)' || functionName === '(program)') continue;
    const where = area(url, baseline);
    areas.set(where, (areas.get(where) ?? 0) + us);
    const file = url.replace(/^file:\/\//, '').replace(/^.*node_modules\//, '');
    const shortFile = file.startsWith(ROOT) ? relative(ROOT, file) : file;
    const name = `${functionName || '(anonymous)'} ${shortFile}:${lineNumber + 1}`;
    functions.set(name, (functions.get(name) ?? 0) + us);
  }
  const perRequest = (us: number) => (us / requests).toFixed(2).padStart(7);
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
  const total = [...areas.values()].reduce((a, b) => a + b, 0);
  const lines = [`  busy (not idle, not "(program)"): ${perRequest(total)} µs/request`];
  for (const [name, us] of sorted(areas)) lines.push(`  ${perRequest(us)}  ${name}`);
  // Inclusive time of redlimit's functions (their synchronous part: what they and their callees
  // ran before returning or awaiting), a function counted once per stack.
  const inclusive = new Map<number, number>();
  const totalOf = (node: ProfileNode): number => {
    let t = self.get(node.id) ?? 0;
    for (const child of node.children ?? []) t += totalOf(byId.get(child)!);
    inclusive.set(node.id, t);
    return t;
  };
  totalOf(profile.nodes[0]!);
  const ours = new Map<string, number>();
  const walk = (node: ProfileNode, onStack: Set<string>): void => {
    const { functionName, url, lineNumber } = node.callFrame;
    let stack = onStack;
    if (area(url, baseline).startsWith('redlimit')) {
      const file = url.replace(/^file:\/\//, '');
      const name = `${functionName || '(anonymous)'} ${relative(baseline && file.startsWith(baseline) ? baseline : ROOT, file)}:${lineNumber + 1}`;
      if (!onStack.has(name)) {
        ours.set(name, (ours.get(name) ?? 0) + inclusive.get(node.id)!);
        stack = new Set(onStack).add(name);
      }
    }
    for (const child of node.children ?? []) walk(byId.get(child)!, stack);
  };
  walk(profile.nodes[0]!, new Set());
  lines.push('  redlimit functions, inclusive of callees (synchronous part):');
  for (const [name, us] of sorted(ours).slice(0, top)) lines.push(`  ${perRequest(us)}  ${name}`);
  lines.push('  top functions (self time):');
  for (const [name, us] of sorted(functions).slice(0, top)) {
    lines.push(`  ${perRequest(us)}  ${name}`);
  }
  return lines.join('\n');
}

async function profileApp(
  platform: Platform,
  variant: Variant,
  redisUrl: string,
  seconds: number,
  top: number,
  baseline?: string,
): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'redlimit-prof-'));
  const args = [
    '-r',
    'ts-node/register/transpile-only',
    join(__dirname, 'http-app.ts'),
    platform,
    variant,
    redisUrl,
    `bench-prof:${process.pid}:`,
    ...(baseline ? [join(baseline, 'lib', 'nest')] : []),
  ];
  const child: ChildProcess = spawn(process.execPath, args, {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m: AppMessage) => ('port' in m ? resolve(m.port) : undefined));
    child.once('exit', (code) => reject(new Error(`${platform} ${variant} exited: ${code}`)));
  });
  const url = `http://127.0.0.1:${port}/hello`;
  await cannon(url, 3); // warm-up, not profiled
  child.send('profile');
  cannonTotal = 0;
  const requests = await cannon(url, seconds);
  const file = join(dir, 'app.cpuprofile');
  const written = new Promise((resolve) => {
    child.on('message', (m: AppMessage) => ('profiled' in m ? resolve(m.profiled) : undefined));
  });
  child.send({ profileTo: file });
  await written;
  child.send('stop');
  await new Promise((resolve) => child.once('exit', resolve));
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  if (process.env.KEEP_PROFILES) console.log(`profile kept: ${file}`);
  else rmSync(dir, { recursive: true, force: true });
  const label = `${platform} ${variant}${baseline ? ' @ baseline' : ''}`;
  return `${label} (${requests} requests profiled)\n${summarise(profile, requests, top, baseline)}`;
}

/** Requests autocannon got answered in `seconds`. */
async function cannon(url: string, seconds: number): Promise<number> {
  const bin = require.resolve('autocannon/autocannon.js');
  const child = spawn(
    process.execPath,
    [bin, '--json', '--no-progress', '-c', '32', '-d', String(seconds), url],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  await new Promise((resolve) => child.once('exit', resolve));
  const result = JSON.parse(out.trim().split('\n').pop()!) as {
    requests: { total: number };
    non2xx: number;
  };
  if (result.non2xx) throw new Error(`${url}: ${result.non2xx} non-2xx responses`);
  cannonTotal += result.requests.total;
  return cannonTotal;
}
let cannonTotal = 0;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      platforms: { type: 'string', default: 'express,fastify' },
      variants: { type: 'string', default: 'bare,redlimit,attempt,default' },
      duration: { type: 'string', default: '8' },
      baseline: { type: 'string', default: '' },
      top: { type: 'string', default: '25' },
    },
  });
  const baselineDir = values.baseline ? resolve(values.baseline) : '';
  const redis = await benchRedis(process.env.REDIS_URL);
  try {
    for (const platform of values.platforms.split(',') as Platform[]) {
      for (const variant of values.variants.split(',') as Variant[]) {
        const builds = baselineDir && variant !== 'bare' ? [undefined, baselineDir] : [undefined];
        for (const baseline of builds) {
          cannonTotal = 0;
          console.log(
            await profileApp(
              platform,
              variant,
              redis.url,
              Number(values.duration),
              Number(values.top),
              baseline,
            ),
          );
          console.log('');
        }
      }
    }
  } finally {
    await redis.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
