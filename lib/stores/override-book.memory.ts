import type {
  OverrideBook,
  OverrideHistoryEntry,
  OverrideWrite,
  PolicyOverride,
} from '../core/overrides';
import { MAX_OVERRIDE_HISTORY, overrideField, overrideJson, parseOverride } from './override-book';

/**
 * Live policy overrides of a `MemoryStore` (one process): the same semantics as
 * {@link RedisOverrideBook}, stored as Redis stores them (so what one reads, the other reads).
 */
export class MemoryOverrideBook implements OverrideBook {
  private readonly stored = new Map<string, string>();
  private current = 0;
  private readonly entries: OverrideHistoryEntry[] = [];

  constructor(private readonly clock: () => number) {}

  now(): number {
    return Math.floor(this.clock());
  }

  version(): Promise<number> {
    return Promise.resolve(this.current);
  }

  stamp(): Promise<string> {
    return Promise.resolve(`:${this.current}`);
  }

  list(): Promise<{
    version: number;
    stamp: string;
    overrides: PolicyOverride[];
    unreadable: string[];
  }> {
    this.dropPassed();
    const overrides: PolicyOverride[] = [];
    const unreadable: string[] = [];
    for (const value of this.stored.values()) {
      const parsed = parseOverride(value);
      if (parsed === undefined) unreadable.push(value);
      else overrides.push(parsed);
    }
    overrides.sort((a, b) => a.version - b.version);
    return Promise.resolve({
      version: this.current,
      stamp: `:${this.current}`,
      overrides,
      unreadable,
    });
  }

  set(write: OverrideWrite): Promise<PolicyOverride> {
    const at = this.now();
    const version = ++this.current;
    this.stored.set(
      overrideField(write.policy, write.scope),
      `${version}:${at}:${write.until ?? ''}:${overrideJson(write)}`,
    );
    this.remember({ action: 'set', ...write, version, at });
    this.dropPassed();
    return Promise.resolve(Object.freeze({ ...write, version, at }));
  }

  unset(entry: {
    policy: string;
    scope: string;
    actor: string;
    reason?: string;
  }): Promise<boolean> {
    const removed = this.stored.delete(overrideField(entry.policy, entry.scope));
    if (removed)
      this.remember({ action: 'unset', ...entry, version: ++this.current, at: this.now() });
    this.dropPassed();
    return Promise.resolve(removed);
  }

  history(count: number): Promise<OverrideHistoryEntry[]> {
    return Promise.resolve(this.entries.slice(-count).reverse());
  }

  /** Raw access for tests of readers: stores `value` under a field as Redis would. */
  storeRaw(field: string, value: string): void {
    this.stored.set(field, value);
    this.current++;
  }

  private remember(entry: OverrideHistoryEntry): void {
    this.entries.push(Object.freeze(entry));
    if (this.entries.length > MAX_OVERRIDE_HISTORY) this.entries.shift();
  }

  /** Overrides past their `until` go, as lua/overrides/write.lua removes them. */
  private dropPassed(): void {
    const now = this.now();
    for (const [field, value] of this.stored) {
      const until = /^\d+:\d+:(\d*):/.exec(value)?.[1];
      if (until !== undefined && until !== '' && Number(until) <= now) this.stored.delete(field);
    }
  }
}
