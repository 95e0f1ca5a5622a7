import type { Cluster, Redis } from 'ioredis';
import { StoreTimeoutError } from '../core/errors';
import { monotonicNow } from '../core/clock.util';
import { checkOptions } from '../core/options.util';
import { type Algorithm, POLICY_ALGORITHMS } from '../core/policy';
import { batchCall, type QueuedDecision, sendsSpendId } from './batch-args.util';
import { bounded } from './bounded.util';
import { ClockGate } from './clock-gate';
import { type ClientPort, clientPort } from './clients/client-port';
import type { RedisStoreClient } from './clients/redis-client.shape';
import { ClockOffset } from './clock-offset';
import { checkedClock } from './clock-reading.util';
import { Coalescer } from './coalescer';
import { FLEET_BEAT_MS, FLEET_TTL_MS, type FleetBeat } from './fleet';
import type { FallbackLockout, FallbackSpend } from './fleet-fallback';
import { BOARD_CALL_MS, type BoardBook } from './board-book';
import { RedisBoardBook } from './board-book.redis';
import { type FleetState, RedisFleet } from './redis-fleet';
import { RefusalCache, type RefusalCacheOptions } from './refusal-cache';
import { explainedError, ScriptRunner } from './script-runner';
import type { ScriptId } from './scripts';
import { nextSpendId, processSpendTag } from './spend-id.util';
import { stateLifetimeMs } from './state-lifetime.util';
import {
  costArg,
  expiryOffset,
  limitArgs,
  type ReplyCursor,
  rulesArg,
  toResult,
} from './script-reply.util';
import { earliest, part } from './slot-groups.util';
import { SlotTurns } from './slot-turns';
import { StackRuns } from './redis-stack';
import {
  blockKey,
  ledgerKey,
  epochKey,
  fleetKey,
  outcomeHashKey,
  outcomeKey,
  storageKeysWithLedgers,
} from './storage-key.util';
import { type LostReplyCounts, LostReplies, type LostSpend } from './lost-replies';
import { clusterSlot } from './cluster-slot.util';
import { checkEpochArguments } from './epoch-args.util';
import { grantOfLeases } from '../core/store';
import type { OverrideBook } from '../core/overrides';
import { RedisOverrideBook } from './override-book.redis';
import type {
  AdjustRequest,
  EpochReading,
  RefundRequest,
  GrantRequest,
  ResetRequest,
  SpendRequest,
  SpendResult,
  StackResult,
  Store,
} from './store.interface';

/** An ioredis client: a single `Redis` connection or a `Cluster`. */
export type RedisClient = Redis | Cluster;

/** Options of {@link RedisStore}. */
export interface RedisStoreOptions {
  /**
   * The client to run scripts on: ioredis or iovalkey (`Redis`, `Cluster`), or node-redis
   * (`createClient()`, `createCluster()`), told apart by shape (see {@link RedisStoreClient}).
   * The store never connects or closes it.
   */
  readonly client: RedisStoreClient;
  /** Prepended to every stored key. Default `'rl:'`. */
  readonly prefix?: string;
  /**
   * Replaces Redis `TIME` as the source of time (ms since the epoch), e.g. `() => Date.now()` or a
   * controllable clock in tests and simulations. Windows follow this clock; Redis still expires
   * keys in real time, so expiries are shifted by the clock's distance from real time, rounded up
   * to whole days, plus one day: keys outlive their windows by up to two days of real time
   * (harmless: a key of a past window counts as empty), and a clock may stand still for a day
   * without losing state. No state is recognised by that shift (it differs between processes):
   * stores whose clocks differ still share every key.
   *
   * What the clock must be: ms as a finite number ≥ 0, whole or fractional (floored), checked
   * at every reading (anything else, or a clock that throws, is a TypeError / RangeError thrown
   * to the caller, never a store failure); the same clock for every process
   * that shares this prefix, or their skew decides windows (hosts 5 ms apart put a spend 5 ms from
   * a window edge in different windows); it may step back (an NTP step): state from a later window
   * is never overwritten, time counts as no earlier than the latest window the state has seen, and
   * waits are counted from the clock as it reads. Redis `TIME` (the default) is one clock for all.
   */
  readonly clock?: () => number;
  /**
   * Coalescing: decisions (consume, peek) that arrive while this store already waits for Redis
   * go out together, at the end of the event-loop turn, as one script run that evaluates them in
   * arrival order — each still atomic and all-or-nothing on its own keys, with its own answer and
   * deadline: observably the same as separate calls in that order. A decision that finds nothing
   * in flight is sent at once, alone, as without coalescing. Default `true`. On Cluster a batch
   * holds the decisions of one slot (a hot key under attack, an app-wide budget); decisions on
   * different slots are script runs of their own, and what one event-loop turn sends to a master
   * (batches, decisions sent at once) reaches it in one socket write.
   */
  readonly coalesce?: boolean;
  /**
   * Remembers refusals in this process (see `RefusalCache`): a consume refused with a wait
   * (out of budget, or locked out) is refused again without a round trip, with
   * `decision.cached: true`, for the same policy, keys and cost until the wait has passed. It only
   * refuses, never admits. `true` keeps at most 10 000 refusals and asks Redis again at least every
   * second; `{ maxKeys, maxAgeMs }` sets those bounds. A refund or reset made by another process is
   * seen within `maxAgeMs` (those made through this store at once). Default: off.
   */
  readonly refusalCache?: boolean | RefusalCacheOptions;
  /**
   * How often this process announces itself in its fleet (the processes sharing this prefix), in
   * ms, while a limiter on this store has `failMode: 'memory'`. While Redis fails, the fallback
   * gives each process its share of every limit (the limit divided by the fleet's size as last
   * seen), so the fleet together admits no more than the limit. A whole number from 100 to
   * 60 000. Default 5 000.
   */
  readonly fleetBeatMs?: number;
  /**
   * How long a process stays in its fleet after its latest beat, in ms: how long the fallback of
   * `failMode: 'memory'` can last into an outage (past it this process takes no share: the others
   * may have stopped counting it), and how long a process that died without leaving keeps
   * counting (the others' shares are smaller meanwhile, and a process that joins takes no share
   * until every member has been answered a beat since). A whole number from 3 × `fleetBeatMs` to one day.
   * Default 600 000 (10 minutes).
   */
  readonly fleetTtlMs?: number;
  /**
   * Outcome markers: every allowed spend leaves a small marker of its outcome (one `HSET` per
   * script run, in one hash per process and Cluster slot), so that a spend whose reply is lost
   * with its connection is given back once it can no longer run, and a command a reconnecting
   * client sends again is charged once (see docs/failure-modes.md). Default `true`. `false`
   * saves that work (about a quarter of what Redis executes for a decision sent alone) where a
   * unit lost now and then does not matter: a lost reply then stays charged, and a command sent
   * again (ioredis `autoResendUnfulfilledCommands`, its default) is charged again.
   */
  readonly outcomeMarkers?: boolean;
}

/** Each algorithm's consume script (built once, not per call). */
const CONSUME_SCRIPTS = Object.fromEntries(
  POLICY_ALGORITHMS.map((algorithm) => [algorithm, `${algorithm}/consume`] as const),
) as { readonly [A in Algorithm]: `${A}/consume` };

const OPTIONS: readonly (keyof RedisStoreOptions)[] = [
  'client',
  'prefix',
  'clock',
  'coalesce',
  'refusalCache',
  'fleetBeatMs',
  'fleetTtlMs',
  'outcomeMarkers',
];

/**
 * Budget in Redis, shared by every process that uses the same Redis and prefix. Each decision is
 * one Lua script run (an FCALL of redlimit's function library, loaded transparently when a server
 * lacks it; EVALSHA where functions are not permitted), so the check and the spend cannot be
 * interleaved with anything.
 *
 * On Redis Cluster, the keys of one call that live in different slots are spent slot group by slot
 * group, in slot order, each group atomically; when a later group refuses (or fails), the groups
 * already charged are refunded by receipt. This never over-admits, but under contention a call may
 * be refused although it would have fit.
 *
 * A spend carries its caller's deadline (the instant the limiter stops waiting, `timeoutMs` after
 * the call began, converted to the Redis clock with a measured offset), shared by every slot group
 * of the call: a script that runs after it, because the command was delayed or queued while the
 * caller had already given up, writes nothing.
 *
 * @example
 * const store = new RedisStore({ client: new Redis(process.env.REDIS_URL!) });
 * const limiter = new Limiter(store, { name: 'login', algorithm: 'fixed-window', limit: 10, window: '15m' });
 */
export class RedisStore implements Store {
  /** Prepended to every stored key. */
  readonly prefix: string;
  private readonly client: ClientPort;
  private readonly clock?: () => number;
  private readonly expiryOffsetMs: number;
  private readonly cluster: boolean;
  private readonly redisClock = new ClockOffset();
  private readonly scripts: ScriptRunner;
  /** Issue order through the first measurement of the Redis clock (see {@link ClockGate}). */
  private readonly gate: ClockGate;
  private readonly coalesce: boolean;
  /** See {@link RedisStoreOptions.outcomeMarkers}. */
  private readonly outcomeMarkers: boolean;
  /** Decisions queued per slot while a run is in flight there (see {@link Coalescer}). */
  private readonly batches: Coalescer<QueuedDecision>;
  /** Refusals remembered in this process (option `refusalCache`), or undefined when off. */
  private readonly refusals?: RefusalCache;
  /** Cluster: issue order per slot (see {@link SlotTurns}). */
  private readonly slotTurns = new SlotTurns();
  /** Stacks, and spends over several Cluster slots. */
  private readonly stacks: StackRuns;
  /** Spends whose reply was lost with the connection, until they are settled. */
  private readonly lost = new LostReplies((spend) => this.settleLost(spend));
  /** The outcome hash off Cluster, and on Cluster by slot (see {@link outcomeHash}). */
  private loneHash?: string;
  private readonly slotHashes: string[] = [];
  /** The fleet of processes on this prefix and the fallback of `failMode: 'memory'`. */
  private readonly fleetState: RedisFleet;
  private boardBook?: BoardBook;
  private overrideBook?: OverrideBook;

  constructor(options: RedisStoreOptions) {
    const client = clientPort(options?.client, 'RedisStore options.client');
    checkOptions(options, OPTIONS, 'RedisStore options');
    const prefix = options.prefix ?? 'rl:';
    if (typeof prefix !== 'string') {
      throw new TypeError(`RedisStore options.prefix must be a string; got ${typeof prefix}`);
    }
    if (options.clock !== undefined && typeof options.clock !== 'function') {
      throw new TypeError(
        'RedisStore options.clock must be a function returning ms since the epoch',
      );
    }
    this.client = client;
    this.scripts = new ScriptRunner(client);
    this.gate = new ClockGate(this.redisClock, () => client.time(), options.clock !== undefined);
    this.prefix = prefix;
    // A custom clock's readings are checked where they are read (the first one here).
    this.clock = options.clock && checkedClock(options.clock, 'RedisStore options.clock');
    this.expiryOffsetMs = this.clock ? expiryOffset(this.clock()) : 0;
    this.cluster = client.cluster;
    if (options.coalesce !== undefined && typeof options.coalesce !== 'boolean') {
      throw new TypeError('RedisStore options.coalesce must be true or false');
    }
    this.coalesce = options.coalesce !== false;
    if (options.outcomeMarkers !== undefined && typeof options.outcomeMarkers !== 'boolean') {
      throw new TypeError('RedisStore options.outcomeMarkers must be true or false');
    }
    this.outcomeMarkers = options.outcomeMarkers !== false;
    this.fleetState = new RedisFleet(
      {
        beat: (member, ttlMs, answeredAt) => this.beat(member, ttlMs, answeredAt),
        charge: (spend, from, to) => this.chargeFallback(spend, from, to),
        lock: (lockout) => this.lockFallback(lockout),
      },
      this.clock ?? (() => Math.floor(monotonicNow() + (this.redisClock.value ?? 0))),
      ...fleetTimes(options.fleetBeatMs, options.fleetTtlMs),
    );
    this.batches = new Coalescer((batch) => this.send(batch), this.cluster);
    const { refusalCache } = options;
    if (refusalCache !== undefined && refusalCache !== false) {
      this.refusals = new RefusalCache(refusalCache, this.clock ?? monotonicNow);
    }
    this.stacks = new StackRuns({
      prefix,
      cluster: this.cluster,
      customClock: this.clock !== undefined,
      expiryOffsetMs: this.expiryOffsetMs,
      slotTurns: this.slotTurns,
      run: (id, keys, args) => this.run(id, keys, args),
      now: () => this.now(),
      knownDeadline: (deadlineAt) => this.knownDeadline(deadlineAt),
      lateReply: (deadlineAt, receivedAt, retried) =>
        this.lateReply(deadlineAt, receivedAt, retried),
      observe: (sentAt, receivedAt, redisNow) =>
        this.redisClock.observe(sentAt, receivedAt, redisNow),
      refundPart: (request, at, spendId, marks, record) =>
        this.refundPart(request, at, spendId, marks, record),
    });
  }

  consume(request: SpendRequest): Promise<SpendResult> {
    const { refusals } = this;
    if (refusals === undefined) return this.spend(request);
    const remembered = refusals.consume(request);
    if (remembered !== undefined) return Promise.resolve(remembered);
    const issued = refusals.issue();
    return this.spend(request).then((result) => {
      refusals.rememberConsume(request, result, issued);
      return result;
    });
  }

  /**
   * A refusal the refusal cache holds for exactly this consume (undefined when off or none).
   * @internal
   */
  rememberedRefusal(request: SpendRequest): SpendResult | undefined {
    return this.refusals?.consume(request);
  }

  private spend(request: SpendRequest): Promise<SpendResult> {
    // The common case first, without a closure: nothing held, one node.
    if (!this.cluster && this.gate.open(request.deadlineAt)) {
      return this.enqueue(request, true, nextSpendId());
    }
    return this.gate.inOrder(request.deadlineAt, async () => {
      if (!this.cluster) return this.enqueue(request, true, nextSpendId());
      const groups = this.stacks.slotGroups(request);
      if (groups.length === 1) {
        const [[slot]] = groups as [[number, unknown]];
        return this.stacks.whenSlotsFree(groups, () =>
          this.enqueue(request, true, nextSpendId(), slot),
        );
      }
      // Keys in several Cluster slots: slot groups with compensation, as for a stack of one.
      return (await this.stacks.spend([request])).results[0]!;
    });
  }

  peek(request: SpendRequest): Promise<SpendResult> {
    if (!this.cluster && !this.gate.holding) return this.enqueue(request, false);
    return this.gate.inOrder(undefined, async () => {
      if (!this.cluster) return this.enqueue(request, false);
      const groups = this.stacks.slotGroups(request);
      if (groups.length === 1) {
        const [[slot]] = groups as [[number, unknown]];
        return this.stacks.whenSlotsFree(groups, () =>
          this.enqueue(request, false, undefined, slot),
        );
      }
      return (await this.stacks.peek([request])).results[0]!;
    });
  }

  consumeStack(requests: readonly SpendRequest[]): Promise<StackResult> {
    const { refusals } = this;
    if (refusals === undefined) {
      return this.gate.inOrder(earliest(requests), () => this.stacks.spend(requests));
    }
    const remembered = refusals.consumeStack(requests);
    if (remembered !== undefined) return Promise.resolve(remembered);
    const issued = refusals.issue();
    return this.gate
      .inOrder(earliest(requests), () => this.stacks.spend(requests))
      .then((result) => {
        refusals.rememberStack(requests, result, issued);
        return result;
      });
  }

  peekStack(requests: readonly SpendRequest[]): Promise<StackResult> {
    return this.gate.inOrder(undefined, () => this.stacks.peek(requests));
  }

  async refund(request: RefundRequest): Promise<void> {
    await this.settleSpend(request);
  }

  async adjust(request: AdjustRequest): Promise<void> {
    await this.settleSpend(request, request.actualCost);
  }

  async extend(request: RefundRequest): Promise<boolean> {
    const renewed = await this.settleSpend(request, undefined, 'concurrency/extend');
    return renewed === request.keys.length * request.limits.length * request.cost;
  }

  /**
   * A refund, an adjustment (with `actualCost`) or a lease's renewal (`script`), slot group by
   * slot group on Cluster. Resolves with the sum of the scripts' replies.
   */
  private settleSpend(
    request: RefundRequest,
    actualCost?: number,
    script?: ScriptId,
  ): Promise<number> {
    this.refusals?.forget(request.policy, request.keys);
    return this.gate.inOrder(undefined, async () => {
      const groups = this.stacks.slotGroups(request);
      const replies = await this.stacks.whenSlotsFree(groups, () =>
        Promise.all(
          groups.map(([, indices]) => {
            const at = request.atByKey?.[indices[0]!] ?? request.at;
            const marks = request.resetMarks && indices.map((i) => request.resetMarks![i]!);
            const { spendId } = request;
            return this.refundPart(
              part(request, indices),
              at,
              spendId,
              marks,
              true,
              actualCost,
              script,
            );
          }),
        ),
      );
      return replies.reduce((sum, reply) => sum + reply, 0);
    });
  }

  /**
   * The device epoch stored under `key` (0 when absent), kept at least `keepMs` from now: one
   * script run on `<prefix>epoch:{<key>}` (see {@link Store.readEpoch}).
   */
  async readEpoch(key: string, keepMs: number): Promise<EpochReading> {
    const reply = await this.epoch('epoch/read', key, keepMs);
    const [epoch, now] = Array.isArray(reply) ? (reply as unknown[]) : [];
    if (!isEpoch(epoch) || typeof now !== 'number' || !Number.isSafeInteger(now) || now < 0) {
      throw new TypeError(
        `redlimit: epoch/read answered ${String(reply)}, not an epoch and a time`,
      );
    }
    return { epoch, now };
  }

  /**
   * Moves the device epoch stored under `key` on by one (creating it at 1), keeps it at least
   * `keepMs` from now, and resolves with the new epoch: one script run (see {@link Store.bumpEpoch}).
   */
  async bumpEpoch(key: string, keepMs: number): Promise<number> {
    const reply = await this.epoch('epoch/bump', key, keepMs);
    if (!isEpoch(reply)) {
      throw new TypeError(`redlimit: epoch/bump answered ${String(reply)}, not an epoch`);
    }
    return reply;
  }

  private async epoch(
    script: 'epoch/read' | 'epoch/bump',
    key: string,
    keepMs: number,
  ): Promise<unknown> {
    checkEpochArguments(key, keepMs, script === 'epoch/read' ? 'readEpoch' : 'bumpEpoch');
    const stored = epochKey(this.prefix, key);
    // In issue order with the other operations of this store (and of its slot on Cluster).
    const slot = this.cluster ? clusterSlot(stored) : -1;
    const reply = await this.gate.inOrder(undefined, () =>
      this.stacks.whenSlotsFree([[slot, undefined]], () =>
        this.run(script, [stored], [this.now(), this.expiryOffsetMs, keepMs]),
      ),
    );
    return reply;
  }

  /**
   * Where a limiter with `failMode: 'memory'` counts while Redis fails: this store's one
   * fleet-aware fallback, in this process's memory, with this process's share of each limit (see
   * {@link RedisStoreOptions.fleetBeatMs}); what it allows is charged into Redis when Redis is
   * back. The first call starts the heartbeat.
   */
  fallback(): Store {
    return this.fleetState.fallback();
  }

  /**
   * The fleet as this process last saw it (its size and this process's place), what the fallback
   * owes Redis, and what it charged into it; `view` is undefined before the first heartbeat that
   * Redis answered (heartbeats start with the first `failMode: 'memory'` limiter).
   */
  get fleet(): FleetState {
    return { view: this.fleetState.view, ...this.fleetState.counts };
  }

  /**
   * One heartbeat now, then what the fallback owes Redis charged into it (for tests and
   * shutdown; the heartbeat runs on its own timer). Rejects when Redis fails.
   */
  async heartbeat(): Promise<void> {
    this.fleetState.fallback();
    await this.fleetState.membership.beat();
    await this.fleetState.reconcile();
  }

  /**
   * The ops board's book on this store (see `RedlimitBoardModule`): what the fleet's board
   * recorders write and the board reads, under `<prefix>{board}:` (one Cluster slot), in issue
   * order with this store's other operations.
   */
  board(): BoardBook {
    return (this.boardBook ??= new RedisBoardBook(
      this.prefix,
      // Bounded: a page, a flush and the shutdown's last flush never wait on a hung Redis.
      (id, keys, args) =>
        bounded(
          this.gate.inOrder(undefined, () => this.run(id, keys, args)),
          BOARD_CALL_MS,
          `the ops board's ${id}`,
        ),
      this.clock ?? (() => Math.floor(monotonicNow() + (this.redisClock.value ?? 0))),
      () => this.now(),
    ));
  }

  /** Live policy overrides, shared by every process on this Redis (see `PolicyOverrides`). */
  overrides(): OverrideBook {
    return (this.overrideBook ??= new RedisOverrideBook(
      this.prefix,
      (id, keys, args) =>
        bounded(
          this.gate.inOrder(undefined, () => this.run(id, keys, args)),
          BOARD_CALL_MS,
          `the policy overrides' ${id}`,
        ),
      this.clock ?? (() => Math.floor(monotonicNow() + (this.redisClock.value ?? 0))),
      () => this.now(),
    ));
  }

  /** Stops the heartbeat and leaves the fleet (on shutdown: the others' shares grow at once). */
  leaveFleet(): Promise<void> {
    return this.fleetState.membership.leave();
  }

  private async beat(
    member: string,
    ttlMs: number,
    answeredAt: number | undefined,
  ): Promise<FleetBeat> {
    const key = fleetKey(this.prefix);
    const sentAt = monotonicNow();
    const reply = await this.gate.inOrder(undefined, () =>
      this.stacks.whenSlotsFree([[this.cluster ? clusterSlot(key) : -1, undefined]], () =>
        this.run('fleet/beat', [key], ['', 0, member, ttlMs, answeredAt ?? '']),
      ),
    );
    const [size, rank, now, joined, oldestOther] = Array.isArray(reply) ? (reply as unknown[]) : [];
    if (
      typeof size !== 'number' ||
      typeof rank !== 'number' ||
      typeof now !== 'number' ||
      typeof oldestOther !== 'number'
    ) {
      throw new TypeError(`redlimit: fleet/beat answered ${String(reply)}`);
    }
    if (!this.clock) this.redisClock.observe(sentAt, monotonicNow(), now);
    return { size, rank, now, joined: joined === 1, oldestOther };
  }

  /** A fallback spend made to weigh `to` units in Redis instead of `from` (see {@link RedisFleet}). */
  /** A lockout the fallback started, written into Redis (see lua/fleet/lock.lua). */
  private async lockFallback(lockout: FallbackLockout): Promise<void> {
    const key = blockKey(this.prefix, lockout.key, lockout.policy);
    // Its ledger (same hash tag): a reset since the lockout started lifted it.
    const ledger = ledgerKey(this.prefix, lockout.key, lockout.policy);
    const { until, duration, forgetAt } = lockout;
    const startedAt = until - duration;
    await this.gate.inOrder(undefined, () =>
      this.stacks.whenSlotsFree([[this.cluster ? clusterSlot(key) : -1, undefined]], () =>
        this.run(
          'fleet/lock',
          [key, ledger],
          [this.now(), this.expiryOffsetMs, until, duration, forgetAt, startedAt],
        ),
      ),
    );
  }

  private chargeFallback(spend: FallbackSpend, from: number, to: number): Promise<number> {
    const { request, id } = spend;
    const at = spend.chargedAt ?? spend.at;
    // Not on a key reset since the spend (marks: its instant); a compensation: no ledger.
    const marks = request.keys.map(() => spend.markAt ?? spend.at);
    return this.gate.inOrder(undefined, async () => {
      const groups = this.stacks.slotGroups(request);
      const replies = await this.stacks.whenSlotsFree(groups, () =>
        Promise.all(
          groups.map(([, indices]) => {
            const keys = indices.map((i) => request.keys[i]!);
            const declared = storageKeysWithLedgers(
              this.prefix,
              keys,
              request.policy,
              request.limits.length,
            );
            // What the spend weighs in this slot group, so a charge sent again changes nothing.
            declared.push(`${outcomeKey(this.prefix, keys[0]!, id)}:charged`);
            return this.run(`${request.algorithm}/refund`, declared, [
              this.now(),
              this.expiryOffsetMs,
              from,
              `fallback:${at}`,
              id,
              -stateLifetimeMs(request.algorithm, request.limits),
              ...limitArgs(request),
              ...indices.map((i) => marks[i]!),
              to,
              spend.request.cost,
            ]);
          }),
        ),
      );
      return (replies as number[]).reduce((sum, reply) => sum + reply, 0);
    });
  }

  reset(request: ResetRequest): Promise<void> {
    this.refusals?.forget(request.policy, request.keys);
    return this.gate.inOrder(undefined, async () => {
      const lifetime = stateLifetimeMs(request.algorithm, request.limits);
      const groups = this.stacks.slotGroups(request);
      await this.stacks.whenSlotsFree(groups, () =>
        Promise.all(
          groups.map(([, indices]) => {
            const { keys } = part(request, indices);
            // Lockouts are lifted too, whether or not the policy still sets one.
            const declared = storageKeysWithLedgers(
              this.prefix,
              keys,
              request.policy,
              request.limits.length,
              true,
            );
            return this.run('reset/reset', declared, [
              this.now(),
              this.expiryOffsetMs,
              '',
              '',
              '',
              lifetime,
              request.limits.length,
            ]);
          }),
        ),
      );
    });
  }

  grant(request: GrantRequest): Promise<void> {
    if (request.algorithm === 'concurrency') return Promise.reject(grantOfLeases(request.policy));
    this.refusals?.forget(request.policy, request.keys);
    return this.gate.inOrder(request.deadlineAt, async () => {
      const groups = this.stacks.slotGroups(request);
      const deadline = this.deadlineOnScriptClock(request.deadlineAt) ?? '';
      const replies = await this.stacks.whenSlotsFree(groups, () =>
        Promise.all(
          groups.map(([, indices]) => {
            const { keys } = part(request, indices);
            const declared = storageKeysWithLedgers(
              this.prefix,
              keys,
              request.policy,
              request.limits.length,
            );
            return this.run(`${request.algorithm}/refund`, declared, [
              this.now(),
              this.expiryOffsetMs,
              request.units,
              'grant',
              deadline,
              stateLifetimeMs(request.algorithm, request.limits),
              ...limitArgs(request),
            ]);
          }),
        ),
      );
      if ((replies as number[]).includes(-1)) {
        throw new StoreTimeoutError(
          undefined,
          'the grant ran after its deadline and wrote nothing',
        );
      }
    });
  }

  /**
   * Refunds one slot group; `record: false` for a compensation (no receipt was ever issued). With
   * `actualCost`, adjusts the spend to it instead; with `script`, runs that script (a lease's
   * renewal) on the same arguments. Resolves with the script's reply.
   */
  private async refundPart(
    request: SpendRequest,
    at: number,
    spendId: string | undefined,
    resetMarks: readonly number[] | undefined,
    record = true,
    actualCost?: number,
    script: ScriptId = `${request.algorithm}/refund`,
  ): Promise<number> {
    const keys = storageKeysWithLedgers(
      this.prefix,
      request.keys,
      request.policy,
      request.limits.length,
    );
    return (await this.run(script, keys, [
      this.now(),
      this.expiryOffsetMs,
      request.cost,
      at,
      spendId ?? '',
      (record ? 1 : -1) * stateLifetimeMs(request.algorithm, request.limits),
      ...limitArgs(request),
      ...(actualCost === undefined
        ? (resetMarks ?? [])
        : [...(resetMarks ?? request.keys.map(() => 0)), actualCost]),
    ])) as number;
  }

  private async decide(
    request: SpendRequest,
    spend: boolean,
    spendId?: string,
    retried = false,
  ): Promise<SpendResult> {
    const keys = storageKeysWithLedgers(
      this.prefix,
      request.keys,
      request.policy,
      request.limits.length,
      request.block !== undefined,
    );
    const deadline = spend ? this.deadlineOnScriptClock(request.deadlineAt) : undefined;
    const args: Array<string | number> = [
      this.now(),
      this.expiryOffsetMs,
      costArg(request, spend),
      spend ? '1' : '0',
      sendsSpendId(request, spend, this.outcomeMarkers) ? (spendId ?? '') : '',
      deadline ?? '',
      rulesArg(request),
    ];
    // A spend is a run of one: its field in the outcome hash is its spend id (lua/lib/outcome.lua).
    const hash =
      this.outcomeMarkers && spend && spendId !== undefined
        ? this.outcomeHash(keys[0]!)
        : undefined;
    let done = '';
    if (hash !== undefined) {
      keys.push(hash);
      done = this.lost.takeDone(hash);
      args.push(done);
      this.lost.sent(hash, spendId!, [{ request, spend, spendId, deadline }]);
    }
    const sentAt = monotonicNow();
    let reply: number[];
    try {
      reply = (await this.run(CONSUME_SCRIPTS[request.algorithm], keys, args)) as number[];
    } catch (error) {
      if (hash !== undefined) {
        this.lost.failed(spendId!, error);
        this.lost.giveBack(hash, done);
      }
      throw error;
    }
    if (hash !== undefined) {
      if (this.lost.answered(spendId!) !== undefined) throw settledMeanwhile();
      if (reply[1] !== -1 && (reply[1]! & 1) === 1) this.lost.prune(hash, spendId!);
    }
    if (this.fleetState.owed) this.fleetState.kick(); // Redis answers again: charge it at once
    const receivedAt = monotonicNow();
    if (!this.clock) this.redisClock.observe(sentAt, receivedAt, reply[0]!);
    if (reply[1] === -1) {
      this.lateReply(request.deadlineAt, receivedAt, retried);
      return this.decide(request, spend, spendId, true);
    }
    return toResult(reply, 1, reply[0]!, request, spendId);
  }

  /**
   * One decision: sent at once when nothing is in flight on its slot (or coalescing is off), else
   * queued for the batch of its slot sent at the end of this event-loop turn.
   */
  private enqueue(
    request: SpendRequest,
    spend: boolean,
    spendId?: string,
    slot = -1,
  ): Promise<SpendResult> {
    // Without coalescing nothing asks whether a slot is busy: runs need no counting.
    if (!this.coalesce) return this.decide(request, spend, spendId);
    if (!this.batches.busy(slot)) {
      return this.batches.counted(slot, this.decide(request, spend, spendId));
    }
    const deadline = spend ? this.deadlineOnScriptClock(request.deadlineAt) : undefined;
    const now = this.now();
    return new Promise<SpendResult>((resolve, reject) => {
      this.batches.add({ request, spend, spendId, deadline, now, slot, resolve, reject });
    });
  }

  /** Sends one slot's queued decisions: one alone as usual, several as one batch/consume run. */
  private send(batch: readonly QueuedDecision[]): void {
    if (batch.length === 1 && !this.clock) {
      const [{ request, spend, spendId, slot, resolve, reject }] = batch as [QueuedDecision];
      this.batches.counted(slot, this.decide(request, spend, spendId)).then(resolve, reject);
      return;
    }
    // On a custom clock each decision carries the reading it was made at (checked then): the
    // batch reads the clock no more, so a bad reading fails only the call that made it.
    const hash = this.outcomeMarkers ? this.outcomeHash(batch[0]!.slot) : undefined;
    let done = '';
    const { keys, args, field } = batchCall(
      batch,
      this.prefix,
      this.clock ? batch[0]!.now : '',
      this.expiryOffsetMs,
      this.clock !== undefined,
      hash,
      () => (done = this.lost.takeDone(hash!)),
    );
    if (field !== undefined) this.lost.sent(hash!, field, batch);
    const sentAt = monotonicNow();
    this.batches.counted(batch[0]!.slot, this.run('batch/consume', keys, args)).then(
      (reply) => {
        const values = reply as number[];
        const receivedAt = monotonicNow();
        if (!this.clock) this.redisClock.observe(sentAt, receivedAt, values[0]!);
        const cursor: ReplyCursor = { next: 1 };
        const late = field === undefined ? undefined : this.lost.answered(field);
        let allowed = false;
        for (const queued of batch) {
          if (this.settleQueued(queued, values, cursor, receivedAt, late)) allowed = true;
        }
        // Its field goes with the next run there (with lost spends, once they are settled).
        if (allowed && field !== undefined && late === undefined) this.lost.prune(hash!, field);
      },
      (error: unknown) => {
        if (field !== undefined) {
          this.lost.failed(field, error);
          this.lost.giveBack(hash!, done);
        }
        for (const { reject } of batch) reject(error);
      },
    );
  }

  /**
   * This process's outcome hash in the slot of `key` (a stored key, or a slot number; -1 off
   * Cluster): see lua/lib/outcome.lua.
   */
  private outcomeHash(key: string | number): string {
    if (!this.cluster)
      return (this.loneHash ??= outcomeHashKey(this.prefix, -1, processSpendTag()));
    const slot = typeof key === 'number' ? key : clusterSlot(key);
    return (this.slotHashes[slot] ??= outcomeHashKey(this.prefix, slot, processSpendTag()));
  }

  /**
   * What became of spends whose reply was lost (the connection went after the command may have
   * been written, so the caller got an error while the spend may have been charged): how many
   * wait, were refunded (they had run), had not run, or could not be settled in time. Each is
   * settled once its deadline has passed and Redis answers again: refunded by its outcome marker
   * if it ran, exactly once (see docs/failure-modes.md).
   */
  get lostReplies(): LostReplyCounts {
    return this.lost.counts;
  }

  /**
   * Settles now every lost reply whose deadline has passed (they are settled in the background
   * anyway; this resolves once the current attempt is done).
   */
  settleLostReplies(): Promise<void> {
    return this.lost.flush();
  }

  /**
   * A refund in outcome mode (see lua/lib/refund-frame.lua) of a spend whose reply was lost: gives
   * back what it charged if its marker says it ran, once. In issue order with the store's other
   * operations (on Cluster, in its slot's turn).
   */
  private settleLost(spend: LostSpend): Promise<number> {
    const { request, spendId } = spend;
    this.refusals?.forget(request.policy, request.keys);
    const keys = storageKeysWithLedgers(
      this.prefix,
      request.keys,
      request.policy,
      request.limits.length,
    );
    keys.push(spend.hash);
    const slot = this.cluster ? clusterSlot(keys[0]!) : -1;
    return this.gate.inOrder(undefined, () =>
      this.stacks.whenSlotsFree([[slot, undefined]], async () => {
        const args = [
          this.now(),
          this.expiryOffsetMs,
          request.cost,
          `outcome:${spend.deadline}/${spend.place}/${spend.field}`,
          spendId,
          stateLifetimeMs(request.algorithm, request.limits),
          ...limitArgs(request),
        ];
        return (await this.run(`${request.algorithm}/refund`, keys, args)) as number;
      }),
    );
  }

  /**
   * Hands one decision of a batch its answer (from `reply[cursor.next]` on), as {@link decide}
   * would, and moves the cursor past it; `late`: the run's spends whose settlement as lost was sent
   * already. Returns whether it was allowed a spend.
   */
  private settleQueued(
    queued: QueuedDecision,
    reply: number[],
    cursor: ReplyCursor,
    receivedAt: number,
    late: ReadonlySet<string> | undefined,
  ): boolean {
    const { request, spend, spendId, slot, resolve, reject } = queued;
    const settled = late !== undefined && spendId !== undefined && late.has(spendId);
    if (this.fleetState.owed) this.fleetState.kick(); // Redis answers again: charge it at once
    const at = cursor.next;
    const status = reply[at];
    if (status === -2 || status === -1) cursor.next = at + (status === -2 ? 2 : 1);
    if (status === -2) {
      // This decision's script error (it wrote nothing); the others in the batch stand.
      reject(explainedError(new Error(String(reply[at + 1]))));
      return false;
    }
    if (status === -1) {
      try {
        this.lateReply(request.deadlineAt, receivedAt, false);
      } catch (error) {
        reject(error);
        return false;
      }
      this.batches.counted(slot, this.decide(request, spend, spendId, true)).then(resolve, reject);
      return false;
    }
    const result = toResult(reply, at, reply[0]!, request, spendId, cursor);
    if (settled) reject(settledMeanwhile());
    else resolve(result);
    return result.allowed;
  }

  /**
   * After a script answered that it ran past the deadline (and wrote nothing; the Redis clock
   * estimate was corrected from its reply already): returns when the call should go once more,
   * since it came back before the caller's deadline (the estimate of the Redis clock was wrong: it
   * stepped, or another node answered); else throws StoreTimeoutError.
   */
  private lateReply(deadlineAt: number | undefined, receivedAt: number, retried: boolean): void {
    const inTime = deadlineAt !== undefined && receivedAt < deadlineAt;
    if (inTime && !retried && !this.clock) return;
    throw new StoreTimeoutError(undefined, 'the script ran after its deadline and wrote nothing');
  }

  /**
   * The caller's deadline on the script's clock, or '' for none. With Redis TIME: through the
   * measured offset ({@link ClockGate} measures it before the first spend is sent; if that takes too
   * long, the deadline has simply passed). With a custom clock: the time left, added to the
   * clock's reading (the script then reads the same clock value, so only a call sent after its
   * deadline is refused).
   */
  private knownDeadline(deadlineAt: number | undefined): string {
    const deadline = this.deadlineOnScriptClock(deadlineAt);
    return deadline === undefined ? '' : String(deadline);
  }

  /** {@link knownDeadline} as a number, or undefined for none. */
  private deadlineOnScriptClock(deadlineAt: number | undefined): number | undefined {
    if (deadlineAt === undefined) return undefined;
    if (this.clock) return Math.floor(this.clock() + deadlineAt - monotonicNow());
    const offset = this.redisClock.value;
    if (offset === undefined)
      throw new Error('redlimit: a spend was sent before the Redis clock was measured');
    return Math.floor(deadlineAt + offset);
  }

  /** The clock's reading for ARGV, or '' to have the script read Redis TIME. */
  private now(): string {
    return this.clock ? String(Math.floor(this.clock())) : '';
  }

  /**
   * Runs a script. Anything but a decision (a stack, a refund, a reset) first sends the decisions
   * queued for batches: they were issued before it (on Cluster, in its slots' turn), so they go
   * first.
   */
  private run(id: ScriptId, keys: string[], args: Array<string | number>): Promise<unknown> {
    if (id === 'stack/consume' || !id.endsWith('/consume')) this.batches.flush();
    return this.scripts.run(id, keys, args);
  }
}

/**
 * Options `fleetBeatMs` and `fleetTtlMs`, checked (errors name them as options of `owner`), with
 * their defaults: [beat ms, ttl ms].
 */
export function fleetTimes(
  beat: number | undefined,
  ttl: number | undefined,
  owner = 'RedisStore options',
): [beatMs: number, ttlMs: number] {
  const beatMs = beat ?? FLEET_BEAT_MS;
  if (!Number.isInteger(beatMs) || beatMs < 100 || beatMs > 60_000) {
    throw new RangeError(
      `${owner}.fleetBeatMs must be a whole number of ms from 100 to 60000; got ${String(beat)}`,
    );
  }
  const ttlMs = ttl ?? Math.max(FLEET_TTL_MS, 3 * beatMs);
  if (!Number.isInteger(ttlMs) || ttlMs < 3 * beatMs || ttlMs > 86_400_000) {
    throw new RangeError(
      `${owner}.fleetTtlMs must be a whole number of ms from 3 × fleetBeatMs (${3 * beatMs}) to 86400000; got ${String(ttl)}`,
    );
  }
  return [beatMs, ttlMs];
}

/**
 * A spend answered after its settlement as a lost spend was sent (it was unanswered long past its
 * deadline, or had none): the settlement gives it back, so it is reported failed, not allowed.
 */
function settledMeanwhile(): StoreTimeoutError {
  return new StoreTimeoutError(undefined, 'its reply came after it was settled as lost');
}

/** A device epoch as a script answers it: a whole number ≥ 0. */
function isEpoch(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
