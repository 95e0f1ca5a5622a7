import { isCallerError } from '../core/caller-error.util';
import { bounded } from './bounded.util';
import { monotonicNow } from '../core/clock.util';
import { StoreTimeoutError } from '../core/errors';
import type { SpendRequest } from './store.interface';

/**
 * How long Redis keeps a spend's outcome marker (ms of real time): `OUTCOME_KEEP_MS` in
 * lua/lib/outcome.lua. A spend whose reply was lost is settled within this time of being made, or
 * not at all (it then stays charged: a unit lost, never one created).
 */
export const OUTCOME_KEEP_MS = 60_000;

/** Most spends remembered at once; past it the oldest is forgotten (it stays charged if it ran). */
export const MAX_LOST_SPENDS = 10_000;

/** The longest wait for one settlement (ms); past it, it is tried again later. */
const SETTLE_WAIT_MS = 5_000;

/** Settlements sent together in one pass. */
const PARALLEL = 64;

/** The first wait before trying again while the store still fails, doubled up to the last. */
const RETRY_MS = [100, 200, 400, 800, 1_600] as const;

/** One decision of a run (a lone decision, or a coalesced batch), as it was sent. */
export interface RunSpend {
  readonly request: SpendRequest;
  /** Whether it spends (a peek is not tracked). */
  readonly spend: boolean;
  /** Its spend id (a spend without one is not tracked). */
  readonly spendId: string | undefined;
  /** Its deadline on the script's clock, or undefined for none. */
  readonly deadline: number | undefined;
}

/** A spend whose reply never came back: what settling it needs. */
export interface LostSpend {
  /** The spend as it was sent. */
  readonly request: SpendRequest;
  /** Its spend id (the refund ledger records it: a spend is given back once). */
  readonly spendId: string;
  /** Its deadline on the script's clock, or '' for none: it cannot run after that. */
  readonly deadline: string;
  /** Its caller's deadline (monotonic ms): settling is tried no earlier. */
  readonly deadlineAt: number;
  /** When Redis has forgotten its marker (monotonic ms): settling is not tried after that. */
  readonly forgetAt: number;
  /** The outcome hash its run's field is in (see lua/lib/outcome.lua). */
  readonly hash: string;
  /** Its run's field there. */
  readonly field: string;
  /** Its place in the run (from 1): its entry in the field. */
  readonly place: number;
}

/**
 * Counts of what became of lost replies since the store was made (see `RedisStore.lostReplies`).
 */
export interface LostReplyCounts {
  /** Spends whose reply was lost and that were not settled yet. */
  readonly pending: number;
  /** Settled: the spend had run and was refunded (what of it still weighed). */
  readonly refunded: number;
  /** Settled: the spend had not run (nothing to give back). */
  readonly notRun: number;
  /** Not settled in time (the store failed until its marker was forgotten, or too many waited). */
  readonly forgotten: number;
}

/**
 * Whether a failed spend may have run in Redis although its caller got an error: the command may
 * have been written before the connection was lost (its reply went with it). Not for an answer
 * from Redis (an error reply: the script wrote nothing), a call refused before it was sent (the
 * client is offline or closed, its offline queue is off), a script that answered it ran past its
 * deadline, or a caller's own error (a broken clock).
 */
export function mayHaveRun(error: unknown): boolean {
  if (!(error instanceof Error)) return true;
  if (error instanceof StoreTimeoutError || isCallerError(error)) return false;
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if (isReply(e)) return false;
  }
  return !NOT_SENT.test(error.message);
}

/** Errors a client raises for a command it never wrote (ioredis, node-redis). */
const NOT_SENT =
  /^(Stream isn't writeable and enableOfflineQueue options is false|The client is closed|The client is offline)/;

/** An error reply from Redis: ioredis `ReplyError`, node-redis `ErrorReply` (and subclasses). */
function isReply(error: Error): boolean {
  for (let p: unknown = Object.getPrototypeOf(error); p; p = Object.getPrototypeOf(p)) {
    const name = (p as { constructor?: { name?: unknown } }).constructor?.name;
    if (name === 'ReplyError' || name === 'ErrorReply') return true;
    if (p === Error.prototype) return false;
  }
  return false;
}

/** A run sent and not answered yet, or with lost spends not settled yet. */
interface Run {
  readonly hash: string;
  readonly field: string;
  readonly spends: readonly RunSpend[];
  /** When it was sent (monotonic ms): a spend without a deadline counts from then. */
  readonly sentAt: number;
  /** When its first spend not lost yet counts as lost if still unanswered (monotonic ms). */
  dueAt: number;
  /** Whether neither its reply nor its failure came yet. */
  waiting: boolean;
  /** Ids of its spends that were lost, or undefined for none. */
  lost: Set<string> | undefined;
  /** How many of them are not settled (or forgotten, or answered after all) yet. */
  left: number;
}

/** Field names sent with one run to be deleted, at most (the rest go with the next). */
const DONE_PER_RUN = 256;

/** Field names are sent to be deleted once this many wait (or with a refresh). */
const DONE_AT_ONCE = 16;

/**
 * How often a run asks Redis to keep its outcome hash longer (ms), while the process writes there:
 * the hash is kept 80 s from then (`OUTCOME_KEEP_MS` in lua/lib/outcome.lua), so a field is kept
 * at least 60 s ({@link OUTCOME_KEEP_MS}) after its write.
 */
const REFRESH_MS = 20_000;

/**
 * How long after its caller's deadline an unanswered spend counts as lost (a slow reply that
 * comes later is refunded by the limiter as a late reply; one that never comes is settled here).
 */
const OVERDUE_MS = 1_000;

/**
 * Runs in flight (a lone decision, or a coalesced batch: one script run each), and the spends whose
 * reply was lost, until they are settled.
 *
 * A spend is lost when its run's call fails in a way that may have left it charged ({@link
 * mayHaveRun}: the connection went after the command may have been written), or when it is still
 * unanswered {@link OVERDUE_MS} after its caller's deadline (a client that drops the commands of a
 * broken connection never answers them). Once its deadline has passed (the spend can no longer
 * run), each is sent to `settle` (a refund in outcome mode: refunded if its entry in its run's
 * field of the outcome hash says it ran allowed, nothing if not: the number of states given back,
 * -2 when there was no entry, -1 when Redis's clock has not reached the deadline yet), again after
 * a growing wait while the store fails, until it is settled or Redis has forgotten its marker. A
 * reply that comes after all takes it off (the limiter refunds a late reply by its receipt; the
 * refund ledger gives a spend back once whichever comes first). One timer (never holding the
 * process open) runs while any wait.
 *
 * It also keeps the fields whose runs are over (answered with an allowed spend, or every lost spend
 * settled), per outcome hash, for the store to send with its next run there ({@link takeDone}):
 * the hash holds the runs in flight and little more.
 */
export class LostReplies {
  private readonly runs = new Map<string, Run>();
  private readonly pending = new Map<string, LostSpend & { readonly run: Run }>();
  /** Spends whose settlement was sent and is not answered yet. */
  private readonly settling = new Set<string>();
  /** Per outcome hash, fields to delete. */
  private readonly done = new Map<string, string[]>();
  /** Per outcome hash, when a run last asked for it to be kept longer (monotonic ms). */
  private readonly refreshedAt = new Map<string, number>();
  private timer?: ReturnType<typeof setTimeout>;
  private timerAt = Infinity;
  private running = false;
  /** The earliest time asked for while a pass was under way: that pass runs again by then. */
  private wantedAt = Infinity;
  private failures = 0;
  private refunded = 0;
  private notRun = 0;
  private forgotten = 0;

  constructor(private readonly settle: (spend: LostSpend) => Promise<number>) {}

  /** What became of lost replies so far. */
  get counts(): LostReplyCounts {
    return {
      pending: this.pending.size,
      refunded: this.refunded,
      notRun: this.notRun,
      forgotten: this.forgotten,
    };
  }

  /**
   * A run was sent (again, for a lone spend sent once more after its script ran late: the same
   * field): its spends that spend and have an id are tracked until it is answered or fails.
   */
  sent(hash: string, field: string, spends: readonly RunSpend[]): void {
    const sentAt = monotonicNow();
    let dueAt = Infinity;
    for (const { request, spend, spendId } of spends) {
      if (!spend || spendId === undefined) continue;
      const at = (request.deadlineAt ?? sentAt) + OVERDUE_MS;
      if (at < dueAt) dueAt = at;
    }
    const run: Run = {
      hash,
      field,
      spends,
      sentAt,
      dueAt,
      waiting: true,
      lost: undefined,
      left: 0,
    };
    this.runs.set(field, run);
    this.schedule(dueAt);
  }

  /**
   * A run was answered. Returns the ids of its spends whose settlement was sent already (an
   * unanswered spend counts as lost {@link OVERDUE_MS} after its caller's deadline): it gives
   * them back, so their answers must not be taken as allowed; undefined when there are none.
   */
  answered(field: string): ReadonlySet<string> | undefined {
    const run = this.runs.get(field);
    if (run === undefined) return undefined;
    if (run.lost === undefined) {
      this.runs.delete(field);
      return undefined;
    }
    run.waiting = false;
    let settled: Set<string> | undefined;
    for (const spendId of run.lost) {
      // (being settled, it stays to be settled: tried again if that settlement fails)
      if (this.settling.has(spendId)) (settled ??= new Set()).add(spendId);
      else if (this.pending.has(spendId)) this.finish(spendId);
    }
    this.close(run);
    return settled;
  }

  /** A run's call failed: its spends are lost if it may have run, else answered. */
  failed(field: string, error: unknown): void {
    const run = this.runs.get(field);
    if (run === undefined || !run.waiting) return;
    run.waiting = false;
    if (mayHaveRun(error)) {
      for (const spend of run.spends) {
        if (spend.spend && spend.spendId !== undefined && !run.lost?.has(spend.spendId)) {
          this.lose(run, spend);
        }
      }
    }
    this.close(run);
  }

  /** A run's field to delete from `hash` (its reply came, and it allowed a spend). */
  prune(hash: string, field: string): void {
    const fields = this.done.get(hash);
    if (fields === undefined) this.done.set(hash, [field]);
    else fields.push(field);
  }

  /** Fields taken with {@link takeDone} for a run that failed: sent with a later one. */
  giveBack(hash: string, done: string): void {
    if (done === '') return;
    if (done.startsWith('+')) {
      this.refreshedAt.delete(hash); // (the refresh may not have been made)
      done = done.slice(1);
    }
    for (const field of done.split(',')) if (field !== '') this.prune(hash, field);
  }

  /**
   * What the next run on `hash` sends (see lua/lib/outcome.lua), taken off the lists: '+' when
   * the hash is due to be kept longer ({@link REFRESH_MS}), then the fields to delete,
   * comma-separated, once {@link DONE_AT_ONCE} wait (or with the refresh); '' for nothing. Give it
   * back ({@link giveBack}) if that run fails.
   */
  takeDone(hash: string): string {
    const now = monotonicNow();
    const refresh = now - (this.refreshedAt.get(hash) ?? -Infinity) >= REFRESH_MS;
    if (refresh) this.refreshedAt.set(hash, now);
    const fields = this.done.get(hash);
    let names = '';
    if (fields !== undefined && (refresh || fields.length >= DONE_AT_ONCE)) {
      if (fields.length <= DONE_PER_RUN) {
        this.done.delete(hash);
        names = fields.join(',');
      } else {
        names = fields.splice(0, DONE_PER_RUN).join(',');
      }
    }
    return refresh ? `+${names}` : names;
  }

  /** Settles every lost spend due now (resolves when done; for tests and shutdown). */
  async flush(): Promise<void> {
    this.disarm();
    await this.pass();
  }

  private lose(run: Run, { request, spendId, deadline }: RunSpend): void {
    if (this.pending.size >= MAX_LOST_SPENDS) {
      const oldest = this.pending.keys().next().value as string;
      this.finish(oldest);
      this.forgotten++;
    }
    const deadlineAt = request.deadlineAt ?? run.sentAt;
    const id = spendId!;
    this.pending.set(id, {
      request,
      spendId: id,
      deadline: deadline === undefined ? '' : String(deadline),
      deadlineAt,
      // (its entry is kept OUTCOME_KEEP_MS from its write, which came after the run was sent)
      forgetAt: run.sentAt + OUTCOME_KEEP_MS - 1_000,
      hash: run.hash,
      field: run.field,
      place: run.spends.findIndex((s) => s.spendId === id) + 1,
      run,
    });
    (run.lost ??= new Set()).add(id);
    run.left++;
    this.schedule(deadlineAt);
  }

  /** A lost spend is done with (settled, forgotten, or answered after all). */
  private finish(spendId: string): void {
    const spend = this.pending.get(spendId);
    if (spend === undefined) return;
    this.pending.delete(spendId);
    spend.run.left--;
    this.close(spend.run);
  }

  /** Forgets a run once it is answered (or failed) and its lost spends are done: its field goes. */
  private close(run: Run): void {
    if (run.waiting || run.left > 0 || this.runs.get(run.field) !== run) return;
    this.runs.delete(run.field);
    if (run.lost !== undefined) this.prune(run.hash, run.field);
  }

  /** Arms the timer for `at` (monotonic ms) unless it fires earlier already. */
  private schedule(at: number): void {
    if (at === Infinity) return;
    if (this.running) {
      this.wantedAt = Math.min(this.wantedAt, at); // the pass under way schedules it
      return;
    }
    if (at >= this.timerAt) return;
    this.disarm();
    this.timerAt = at;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Infinity;
        void this.pass();
      },
      Math.max(0, Math.ceil(at - monotonicNow())),
    );
    this.timer.unref();
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  /** Spends of waiting runs that are overdue now are lost; returns when the next one will be. */
  private overdue(now: number): number {
    let next = Infinity;
    for (const run of this.runs.values()) {
      if (!run.waiting || run.dueAt === Infinity) continue;
      if (now < run.dueAt) {
        next = Math.min(next, run.dueAt);
        continue;
      }
      let dueAt = Infinity;
      for (const spend of run.spends) {
        if (!spend.spend || spend.spendId === undefined || run.lost?.has(spend.spendId)) continue;
        const at = (spend.request.deadlineAt ?? run.sentAt) + OVERDUE_MS;
        if (now >= at) this.lose(run, spend);
        else dueAt = Math.min(dueAt, at);
      }
      run.dueAt = dueAt;
      // Every spend of it lost: its client may never answer it (ioredis drops the commands of a
      // broken connection it does not send again): it is forgotten once they are settled.
      if (dueAt === Infinity) run.waiting = false;
      next = Math.min(next, dueAt);
    }
    return next;
  }

  private async pass(): Promise<void> {
    if (this.running) return;
    this.running = true;
    let failed = false;
    let next = Infinity;
    try {
      let now = monotonicNow();
      next = this.overdue(now);
      const due: LostSpend[] = [];
      for (const spend of this.pending.values()) {
        if (now >= spend.forgetAt) {
          this.finish(spend.spendId);
          this.forgotten++;
        } else if (now < spend.deadlineAt) {
          next = Math.min(next, spend.deadlineAt);
        } else {
          due.push(spend);
        }
      }
      for (let i = 0; i < due.length && !failed; i += PARALLEL) {
        // (one answered while an earlier part was settled is not settled: it is off `pending`)
        const part = due.slice(i, i + PARALLEL).filter((spend) => this.pending.has(spend.spendId));
        for (const spend of part) this.settling.add(spend.spendId);
        // Bounded (see `bounded`): a settlement sent again gives nothing more back (its entry
        // goes with the first that finds it).
        const outcomes = await Promise.allSettled(
          part.map((spend) =>
            bounded(this.settle(spend), SETTLE_WAIT_MS, "a lost spend's settlement"),
          ),
        );
        now = monotonicNow();
        outcomes.forEach((outcome, j) => {
          const spend = part[j]!;
          this.settling.delete(spend.spendId);
          if (!this.pending.has(spend.spendId)) return; // answered meanwhile
          if (outcome.status === 'rejected') {
            failed = true;
          } else if (outcome.value !== -1) {
            this.finish(spend.spendId);
            if (outcome.value === -2) this.notRun++;
            else this.refunded++;
          } else {
            next = Math.min(next, now + RETRY_MS[0]); // Redis's clock is not past the deadline yet
          }
        });
      }
    } finally {
      this.running = false;
      next = Math.min(next, this.wantedAt);
      this.wantedAt = Infinity;
    }
    if (failed) {
      next = monotonicNow() + RETRY_MS[Math.min(this.failures, RETRY_MS.length - 1)]!;
      this.failures++;
    } else {
      this.failures = 0;
    }
    if (this.pending.size > 0 || next !== Infinity) {
      this.schedule(next === Infinity ? monotonicNow() + RETRY_MS[0] : next);
    }
  }
}
