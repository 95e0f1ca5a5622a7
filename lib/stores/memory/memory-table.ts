import { lastSpendSequence } from '../spend-id.util';
import type { MemoryAlgorithm } from './memory-algorithm';

/** One stored value of a {@link MemoryTable}. */
export interface MemoryEntry {
  value: unknown;
  expiresAt: number;
  /**
   * The latest spend sequence issued when the entry was created (see `spend-id.util.ts`): a state
   * born after a spend is not the one it charged (see `chargedStates` in `memory-settle.ts`).
   */
  readonly born: number;
}

/** A device epoch as a {@link MemoryTable} keeps it. */
export interface StoredEpoch {
  readonly epoch: number;
  expiresAt: number;
}

/**
 * The keys of a `MemoryStore`, as Redis would hold them: values with an expiry (alive at exactly
 * their expiry instant, gone after it), in order of use, the oldest forgotten past `maxKeys`;
 * expired ones swept out as writes happen (no timer per key). Device epochs are kept apart, with a
 * `maxKeys` of their own.
 */
export class MemoryTable {
  private readonly entries = new Map<string, MemoryEntry>();
  /**
   * Device epochs, apart from the limiter state: a flood of new caller keys cannot push a revoked
   * login's epoch out (which would trust its old tokens again). Bounded by `maxKeys` of their own,
   * oldest used first.
   */
  private readonly epochs = new Map<string, StoredEpoch>();
  private nextSweepAt = 0;

  constructor(
    /**
     * How long past its expiry an entry is kept: 0 on the monotonic clock; a day on a custom
     * clock, as `RedisStore` keeps keys a day or more past their windows then, so that a clock
     * which steps back into a window it had passed still finds that window's state.
     */
    private readonly graceMs: number,
    private readonly sweepIntervalMs: number,
    private readonly maxKeys: number,
  ) {}

  /** Number of entries held (live or not yet swept). */
  get size(): number {
    return this.entries.size;
  }

  /** The entry stored under `name`, expired or not. */
  entry(name: string): MemoryEntry | undefined {
    return this.entries.get(name);
  }

  /** Forgets the entry stored under `name`. */
  delete(name: string): void {
    this.entries.delete(name);
  }

  /**
   * The value stored under `name`, if it has not expired. As in Redis, an entry is alive at exactly
   * its expiry instant and gone only after it: the two stores agree at every boundary.
   */
  live(name: string, now: number): unknown {
    const entry = this.entries.get(name);
    if (!entry) return undefined;
    if (entry.expiresAt + this.graceMs < now) {
      this.entries.delete(name);
      return undefined;
    }
    return entry.value;
  }

  /** The live state of `algorithm` under `name` (undefined when absent or another algorithm's). */
  read(name: string, algorithm: MemoryAlgorithm<unknown>, now: number): unknown {
    const value = this.live(name, now);
    return algorithm.owns(value) ? value : undefined;
  }

  /**
   * Stores an entry as the one used last (Map order is order of use), forgetting the oldest 1 %
   * when that takes the store past `maxKeys` (in one pass: deleting from the front one at a time
   * would walk over the holes it leaves every time).
   */
  write(name: string, value: unknown, expiresAt: number): void {
    const born = this.entries.get(name)?.born ?? lastSpendSequence();
    this.entries.delete(name);
    this.entries.set(name, { value, expiresAt, born });
    if (this.entries.size <= this.maxKeys) return;
    let forget = Math.ceil(this.maxKeys / 100);
    for (const old of this.entries.keys()) {
      this.entries.delete(old);
      if (--forget === 0) break;
    }
  }

  /** Marks an entry as used last, if there is one. */
  touch(name: string): void {
    const entry = this.entries.get(name);
    if (!entry) return;
    this.entries.delete(name);
    this.entries.set(name, entry);
  }

  /** Drops expired entries and epochs, at most once per sweep interval unless forced. */
  sweep(now: number, force: boolean): void {
    if (!force && now < this.nextSweepAt) return;
    this.nextSweepAt = now + this.sweepIntervalMs;
    for (const [name, entry] of this.entries) {
      if (entry.expiresAt + this.graceMs < now) this.entries.delete(name);
    }
    for (const [name, stored] of this.epochs) {
      if (stored.expiresAt < now) this.epochs.delete(name);
    }
  }

  /** An epoch that has not expired (as in Redis: alive at its expiry instant, gone after it). */
  liveEpoch(name: string, now: number): StoredEpoch | undefined {
    const stored = this.epochs.get(name);
    if (stored === undefined) return undefined;
    if (stored.expiresAt < now) {
      this.epochs.delete(name);
      return undefined;
    }
    return stored;
  }

  /** Stores an epoch as the one used last, forgetting the oldest 1 % past `maxKeys`. */
  keepEpoch(name: string, epoch: number, expiresAt: number, now: number): void {
    this.epochs.delete(name);
    this.epochs.set(name, { epoch, expiresAt });
    if (this.epochs.size <= this.maxKeys) return;
    for (const [old, stored] of this.epochs) {
      if (stored.expiresAt < now) this.epochs.delete(old);
    }
    let forget = this.epochs.size > this.maxKeys ? Math.ceil(this.maxKeys / 100) : 0;
    for (const old of this.epochs.keys()) {
      if (forget-- <= 0) break;
      this.epochs.delete(old);
    }
  }
}
