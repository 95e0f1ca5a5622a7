/**
 * One throughput sample (closed loop: `concurrency` decisions in flight, each worker sends its
 * next when its last answers) with what it cost Node and Redis.
 */
import type Redis from 'ioredis';
import { redisCost } from '../support/redis.util';
import type { Contender } from './contenders';

/** One contender's run in one round. */
export interface Sample {
  readonly perSecond: number;
  /** Node CPU of this process (`process.cpuUsage`, all threads) per decision. */
  readonly nodeCpuUs: number;
  /** `INFO commandstats` time of the commands sent, per decision (NaN when not measured). */
  readonly redisCommandUs: number;
  /** Redis server CPU (`INFO cpu`) per decision, every server of the row (NaN when not measured). */
  readonly redisCpuUs: number;
  /** Of it, the CPU of the servers that ran the decisions (one node; the masters on Cluster). */
  readonly redisCpuMastersUs: number;
  /** Of it, the CPU of the replicas, which apply what their masters replicate (0 on one node). */
  readonly redisCpuReplicasUs: number;
  /** Decisions per script run (EVAL, EVALSHA and FCALL calls counted by Redis); NaN without. */
  readonly decisionsPerScript: number;
  /** Commands Redis ran per decision (every command but the bench's own, see redisCost). */
  readonly commandsPerDecision: number;
}

/** Decisions for `seconds`, `concurrency` at a time, decision n for caller n % callers. */
export async function measure(
  contender: Contender,
  seconds: number,
  callers: number,
  concurrency: number,
): Promise<{ decisions: number; seconds: number; nodeCpuUs: number }> {
  let next = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  const end = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) await contender.run(next++ % callers);
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  return { decisions: next, seconds: elapsed, nodeCpuUs: (used.user + used.system) / next };
}

/**
 * A sample with Redis's side: `CONFIG RESETSTAT` on every server of `admins` before, `INFO
 * commandstats` and `INFO cpu` after. `masters` are the servers whose commands are counted (all of
 * them on one node; the masters on Cluster, where replicas replay what masters ran).
 */
export async function sample(
  contender: Contender,
  seconds: number,
  callers: number,
  concurrency: number,
  admins: readonly Redis[],
  masters: readonly Redis[] = admins,
): Promise<Sample> {
  await Promise.all(admins.map((admin) => admin.config('RESETSTAT')));
  const before = await Promise.all(admins.map(redisCost));
  const run = await measure(contender, seconds, callers, concurrency);
  const after = await Promise.all(admins.map(redisCost));
  let cpuSeconds = 0;
  let masterCpuSeconds = 0;
  after.forEach((cost, i) => {
    const used = cost.cpuSeconds - before[i]!.cpuSeconds;
    cpuSeconds += used;
    if (masters.includes(admins[i]!)) masterCpuSeconds += used;
  });
  let commandUsec = 0;
  let scripts = 0;
  let commands = 0;
  for (const admin of masters) {
    const cost = after[admins.indexOf(admin)]!;
    commandUsec += cost.commandUsec;
    for (const name of ['eval', 'evalsha', 'fcall']) scripts += cost.calls[name] ?? 0;
    for (const calls of Object.values(cost.calls)) commands += calls; // the bench's own left out
  }
  return {
    perSecond: run.decisions / run.seconds,
    nodeCpuUs: run.nodeCpuUs,
    redisCommandUs: commandUsec / run.decisions,
    redisCpuUs: (cpuSeconds * 1e6) / run.decisions,
    redisCpuMastersUs: (masterCpuSeconds * 1e6) / run.decisions,
    redisCpuReplicasUs: ((cpuSeconds - masterCpuSeconds) * 1e6) / run.decisions,
    decisionsPerScript: scripts ? run.decisions / scripts : NaN,
    commandsPerDecision: commands / run.decisions,
  };
}
