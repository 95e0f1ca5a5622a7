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

/** A spend whose reply never came back: what settling it needs. */
export interface LostSpend {
  /** The spend as it was sent. */
  readonly request: SpendRequest;
  /** Its spend id: its outcome marker is named after it. */
  readonly spendId: string;
  /** Its deadline on the script's clock, or '' for none: it cannot run after that. */
  readonly deadline: string;
  /** Its caller's deadline (monotonic ms): settling is tried no earlier. */
  readonly deadlineAt: number;
  /** When Redis has forgotten its marker (monotonic ms): settling is not tried after that. */
  readonly forgetAt: number;
  /** The coalesced run's outcome hash that holds its marker as a field, or undefined: a key of its own. */
  readonly runMarker: string | undefined;
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

/** A spend sent and not answered yet. */
interface InFlight {
  readonly request: SpendRequest;
  /** Its deadline on the script's clock, or undefined for none. */
  readonly deadline: number | undefined;
  /** Its caller's deadline (monotonic ms), or when it was sent if it has none. */
  readonly deadlineAt: number;
  /** See {@link LostSpend.runMarker}. */
  readonly runMarker: string | undefined;
}

/**
 * How long after its caller's deadline an unanswered spend counts as lost (a slow reply that
 * comes later is refunded by the limiter as a late reply; one that never comes is settled here).
 */
const OVERDUE_MS = 1_000;

/**
 * Spends in flight, and those whose reply was lost, until they are settled.
 *
 * A spend is lost when its call fails in a way that may have left it charged ({@link mayHaveRun}:
 * the connection went after the command may have been written), or when it is still unanswered
 * {@link OVERDUE_MS} after its caller's deadline (a client that drops the commands of a broken
 * connection never answers them). Once its deadline has passed (the spend can no longer run),
 * each is sent to `settle` (a refund in outcome mode: refunded if its outcome marker says it ran,
 * nothing if not: the number of states given back, -2 when there was no marker, -1 when Redis's
 * clock has not reached the deadline yet), again after a growing wait while the store fails,
 * until it is settled or Redis has forgotten its marker. A reply that comes after all takes it
 * off (the limiter refunds a late reply by its receipt; the refund ledger gives a spend back once
 * whichever comes first). One timer (never holding the process open) runs while any wait.
 */
export class LostReplies {
  private readonly inFlight = new Map<string, InFlight>();
  private readonly pending = new Map<string, LostSpend>();
  /** Spends whose settlement was sent and is not answered yet. */
  private readonly settling = new Set<string>();
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

  /** A spend was sent (again, for a spend sent once more: the same id). */
  sent(
    spendId: string,
    request: SpendRequest,
    deadline: number | undefined,
    runMarker?: string,
  ): void {
    const deadlineAt = request.deadlineAt ?? monotonicNow();
    this.inFlight.set(spendId, { request, deadline, deadlineAt, runMarker });
    this.schedule(deadlineAt + OVERDUE_MS);
  }

  /**
   * A spend was answered (or failed without having run): nothing to settle. Returns false when
   * its settlement was sent already (an unanswered spend counts as lost {@link OVERDUE_MS} after
   * its caller's deadline, or at once without one): it gives the spend back, so the answer must
   * not be taken as allowed.
   */
  answered(spendId: string): boolean {
    if (this.inFlight.delete(spendId)) return true;
    // (being settled, it stays to be settled: tried again if that settlement fails)
    if (this.settling.has(spendId)) return false;
    this.pending.delete(spendId);
    return true;
  }

  /** A spend's call failed: lost if it may have run, else answered. */
  failed(spendId: string, error: unknown): void {
    const flight = this.inFlight.get(spendId);
    if (flight === undefined) return;
    this.inFlight.delete(spendId);
    if (mayHaveRun(error)) this.lose(spendId, flight);
  }

  /** Settles every lost spend due now (resolves when done; for tests and shutdown). */
  async flush(): Promise<void> {
    this.disarm();
    await this.pass();
  }

  private lose(spendId: string, { request, deadline, deadlineAt, runMarker }: InFlight): void {
    if (this.pending.size >= MAX_LOST_SPENDS) {
      const oldest = this.pending.keys().next().value as string;
      this.pending.delete(oldest);
      this.forgotten++;
    }
    this.pending.set(spendId, {
      request,
      spendId,
      deadline: deadline === undefined ? '' : String(deadline),
      deadlineAt,
      // (the marker is kept from the script's run, before this: a margin)
      forgetAt: monotonicNow() + OUTCOME_KEEP_MS - 1_000,
      runMarker,
    });
    this.schedule(deadlineAt);
  }

  /** Arms the timer for `at` (monotonic ms) unless it fires earlier already. */
  private schedule(at: number): void {
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

  private async pass(): Promise<void> {
    if (this.running) return;
    this.running = true;
    let failed = false;
    let next = Infinity;
    try {
      let now = monotonicNow();
      for (const [spendId, flight] of this.inFlight) {
        if (now >= flight.deadlineAt + OVERDUE_MS) {
          this.inFlight.delete(spendId);
          this.lose(spendId, flight);
        } else {
          next = Math.min(next, flight.deadlineAt + OVERDUE_MS);
        }
      }
      const due: LostSpend[] = [];
      for (const spend of this.pending.values()) {
        if (now >= spend.forgetAt) {
          this.pending.delete(spend.spendId);
          this.forgotten++;
        } else if (now < spend.deadlineAt) {
          next = Math.min(next, spend.deadlineAt);
        } else {
          due.push(spend);
        }
      }
      for (let i = 0; i < due.length && !failed; i += PARALLEL) {
        const part = due.slice(i, i + PARALLEL);
        for (const spend of part) this.settling.add(spend.spendId);
        // Bounded (see `bounded`): a settlement sent again gives nothing more back (its marker
        // goes with the first that finds it).
        const outcomes = await Promise.allSettled(
          part.map((spend) =>
            bounded(this.settle(spend), SETTLE_WAIT_MS, "a lost spend's settlement"),
          ),
        );
        now = monotonicNow();
        outcomes.forEach((outcome, j) => {
          const spend = due[i + j]!;
          this.settling.delete(spend.spendId);
          if (!this.pending.has(spend.spendId)) return; // answered meanwhile
          if (outcome.status === 'rejected') {
            failed = true;
          } else if (outcome.value !== -1) {
            this.pending.delete(spend.spendId);
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
    if (this.pending.size > 0 || this.inFlight.size > 0) {
      this.schedule(next === Infinity ? monotonicNow() + RETRY_MS[0] : next);
    }
  }
}
