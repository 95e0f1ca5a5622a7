import { atTurnEnd } from './turn-end';

/**
 * Most decisions in one coalesced batch. Small enough that several batches are in flight at
 * once (Redis works on one while this process builds the next), large enough to save most of
 * the per-command cost. Overridable for measurements with REDLIMIT_MAX_BATCH.
 */
export const MAX_BATCH = Number(process.env.REDLIMIT_MAX_BATCH) || 16;

/** What the coalescer needs of a queued item: its Cluster slot, and how to fail it. */
export interface Batchable {
  /** Its Cluster slot (-1 off Cluster): a batch holds the items of one slot. */
  readonly slot: number;
  /** Fails the item (when its batch could not be sent). */
  readonly reject: (error: unknown) => void;
}

/**
 * Coalescing: when a decision is issued while a script run is in flight on its slot, it waits for
 * the end of this event-loop turn and goes with the other decisions queued for that slot as one
 * batch (at most {@link MAX_BATCH}; a full batch leaves at once). With nothing in flight a decision
 * goes alone at once, so a quiet store adds no latency.
 *
 * The batches leave at the end of the turn before any client releases the writes it held (see
 * {@link atTurnEnd}): on an ioredis Cluster, every batch and every decision sent at once in one
 * turn reach their master in one socket write.
 *
 * The coalescer only queues and counts; `sendBatch` builds and sends a batch (a batch of one may go
 * as a plain decision). Whoever sends anything that is not a queued decision calls {@link flush}
 * first, so queued decisions, issued earlier, are not overtaken.
 */
export class Coalescer<T extends Batchable> {
  /** Script runs sent and not answered yet, per slot: decisions queue only while there are some. */
  private readonly inFlight = new Map<number, number>();
  /** Items waiting for the end of this event-loop turn, per slot. */
  private readonly queues = new Map<number, T[]>();
  private flushScheduled = false;

  /**
   * @param sendBatch sends one slot's batch; a throw fails every item of it
   * @param claimTurn Cluster: a decision sent at once claims the end of its turn (see {@link busy})
   */
  constructor(
    private readonly sendBatch: (batch: T[]) => void,
    private readonly claimTurn = false,
  ) {}

  /**
   * Whether a decision on this slot should be queued rather than sent at once. With `claimTurn`,
   * a decision about to go at once schedules this turn's flush first, before its client may
   * schedule a write of its own: a client that writes a turn's commands together at the end of it
   * (node-redis) then writes the batches queued later in the turn with them, not a turn later.
   */
  busy(slot: number): boolean {
    if (this.queues.has(slot) || this.inFlight.has(slot)) return true;
    if (this.claimTurn) this.scheduleFlush();
    return false;
  }

  /** Queues an item for its slot's next batch. */
  add(item: T): void {
    let queue = this.queues.get(item.slot);
    if (queue === undefined) this.queues.set(item.slot, (queue = []));
    queue.push(item);
    this.scheduleFlush();
    // A full batch leaves at once (on a client that holds a turn's writes, at the end of the
    // turn): Redis starts on it while this process prepares the next.
    if (queue.length >= MAX_BATCH) this.flushSlot(item.slot, queue);
  }

  /** Tracks a script run in flight on a slot until it settles; returns it. */
  counted<R>(slot: number, run: Promise<R>): Promise<R> {
    this.inFlight.set(slot, (this.inFlight.get(slot) ?? 0) + 1);
    const done = (): void => {
      const left = this.inFlight.get(slot)! - 1;
      if (left === 0) this.inFlight.delete(slot);
      else this.inFlight.set(slot, left);
    };
    run.then(done, done);
    return run;
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    atTurnEnd('send', this.endTurn);
  }

  private readonly endTurn = (): void => {
    this.flushScheduled = false;
    this.flush();
  };

  /** Sends every queued batch now. */
  flush(): void {
    if (this.queues.size === 0) return;
    for (const [slot, queue] of this.queues) this.flushSlot(slot, queue);
  }

  private flushSlot(slot: number, batch: T[]): void {
    this.queues.delete(slot);
    try {
      this.sendBatch(batch);
    } catch (error) {
      for (const { reject } of batch) reject(error);
    }
  }
}
