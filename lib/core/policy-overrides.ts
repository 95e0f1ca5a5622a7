import { ALGORITHM_DEFINITIONS } from './algorithms/algorithm.registry';
import type { BlockRule } from './policy-block';
import { type FailMode, type LimitRule, NAME_PATTERN, type ResolvedPolicy } from './policy';
import {
  applyChange,
  blockOptionsOf,
  checkInstant,
  checkNote,
  checkScope,
  type OverrideBook,
  type OverrideHistoryEntry,
  type PolicyChange,
  type PolicyOverride,
} from './overrides';
import { checkOptions } from './options.util';

/** Options of {@link PolicyOverrides}. */
export interface PolicyOverridesOptions {
  /**
   * How often this process asks the store whether the overrides changed (one `GET` of a version
   * number), in ms; a change is in force here at most this long after it was stored (plus a round
   * trip). Default 500; from 50 to 60,000.
   */
  readonly pollMs?: number;
  /** Where problems are told (an override this version cannot read, a failed poll); default `process.emitWarning`. */
  readonly onWarning?: (message: string) => void;
  /**
   * Called when what is in force here changed (a change read from the store, or a `from` /
   * `until` passed), with the overrides now in force and the store version read: e.g. to log it.
   */
  readonly onChange?: (inForce: readonly PolicyOverride[], version: number) => void;
}

/** Options of {@link PolicyOverrides.set}. */
export interface OverrideOptions {
  /** The key prefix it applies to (`tenant:acme:`); default `''`: every key. */
  readonly scope?: string;
  /** In force from this instant (a `Date` or ms since 1970, store clock); default at once. */
  readonly from?: Date | number;
  /** In force until this instant (a `Date` or ms since 1970, store clock); default until removed. */
  readonly until?: Date | number;
  /** Who sets it, for the history (default `'code'`). */
  readonly actor?: string;
  /** Why, for the history. */
  readonly reason?: string;
}

/** Options of {@link PolicyOverrides.clear}. */
export interface ClearOverrideOptions {
  /** The scope whose override goes (default `''`: the one for every key). */
  readonly scope?: string;
  /** Who removes it, for the history (default `'code'`). */
  readonly actor?: string;
  /** Why, for the history. */
  readonly reason?: string;
}

/** A policy as an override leaves it for some keys, and the override version that made it so. */
export interface EffectivePolicy {
  /** The policy in force (validated as any policy). */
  readonly policy: ResolvedPolicy;
  /** The highest store version among the overrides applied. */
  readonly version: number;
}

const SET_OPTIONS = ['scope', 'from', 'until', 'actor', 'reason'] as const;
const CLEAR_OPTIONS = ['scope', 'actor', 'reason'] as const;
const OPTIONS = ['pollMs', 'onWarning', 'onChange'] as const;

/** The overrides of one policy in force now, by scope, resolved against one base policy. */
class PolicyEntry {
  /** Policies combined for calls whose keys fall under different overrides, by their parts. */
  private readonly combined = new Map<string, EffectivePolicy>();

  constructor(
    /** The policy as configured. */
    private readonly base: ResolvedPolicy,
    /** The override for every key, if any. */
    readonly global: EffectivePolicy | undefined,
    /** Scoped overrides: per scope length (longest first), prefix → policy. */
    readonly scoped: ReadonlyArray<readonly [number, ReadonlyMap<string, EffectivePolicy>]>,
    /** Records a policy made here, so a request's limits find it again. */
    private readonly made: (effective: EffectivePolicy) => void,
  ) {}

  /** The policy of one key: its most specific override (the longest scope), else the global one. */
  private of(key: string): EffectivePolicy | undefined {
    for (const [length, byPrefix] of this.scoped) {
      if (key.length < length) continue;
      const found = byPrefix.get(key.slice(0, length));
      if (found !== undefined) return found;
    }
    return this.global;
  }

  /**
   * The policy a call on `keys` runs under. When its keys fall under different overrides (an IP
   * and a raised account), the strictest of their policies, so that no key the caller names can
   * lift the limit of another: each limit the lowest, shadow only if all are, the strictest fail
   * mode, the longest lockout.
   */
  resolve(keys: readonly string[]): EffectivePolicy | undefined {
    if (this.scoped.length === 0) return this.global;
    const first = this.of(keys[0]!);
    let distinct: Array<EffectivePolicy | undefined> | undefined;
    for (let k = 1; k < keys.length; k++) {
      const other = this.of(keys[k]!);
      if (other === first || distinct?.includes(other)) continue;
      (distinct ??= [first]).push(other);
    }
    if (distinct === undefined) return first;
    const id = distinct
      .map(identity)
      .sort((a, b) => a - b)
      .join(',');
    let found = this.combined.get(id);
    if (found === undefined) {
      found = strictest(this.base, distinct);
      if (this.combined.size < 1_000) this.combined.set(id, found);
      this.made(found);
    }
    return found;
  }
}

const FAIL_ORDER: readonly FailMode[] = ['closed', 'memory', 'open'];

/** A number per effective policy object (0: the base), to name a combination of them. */
const identities = new WeakMap<EffectivePolicy, number>();
let lastIdentity = 0;
function identity(effective: EffectivePolicy | undefined): number {
  if (effective === undefined) return 0;
  let id = identities.get(effective);
  if (id === undefined) {
    id = ++lastIdentity;
    identities.set(effective, id);
  }
  return id;
}

/** The strictest of some policies of one base (undefined: the base itself), as one policy. */
function strictest(
  base: ResolvedPolicy,
  parts: ReadonlyArray<EffectivePolicy | undefined>,
): EffectivePolicy {
  const policies = parts.map((p) => p?.policy ?? base);
  const limits = base.limits.map((rule, i) => ({
    limit: Math.min(...policies.map((p) => p.limits[i]!.limit)),
  }));
  const modes = policies.map((p) => p.failMode).filter((m): m is FailMode => m !== undefined);
  const failMode = FAIL_ORDER.find((m) => modes.includes(m));
  const blocks = policies.map((p) => p.block).filter((b): b is BlockRule => b !== undefined);
  const block = blocks.sort((a, b) => b.durationMs - a.durationMs)[0];
  const change: PolicyChange = {
    ...(ALGORITHM_DEFINITIONS[base.algorithm].usesBurst ? {} : { limits }),
    shadow: policies.every((p) => p.shadow === true),
    ...(failMode !== undefined && { failMode }),
    block: block === undefined ? null : blockOptionsOf(block)!,
  };
  return Object.freeze({
    policy: applyChange(base, change),
    version: Math.max(...parts.map((p) => p?.version ?? -1)),
  });
}

/**
 * Live limits: changes of policies kept in the store ({@link OverrideBook}), for every key or for
 * a key prefix (a tenant), optionally from / until an instant, which every process applies within
 * `pollMs` without a read per decision. Give one to limiters (`LimiterOptions.overrides`): each
 * call then runs under the policy as the most specific override in force leaves it. Refunds go
 * back by their receipts' limits, so spends made before a change settle exactly.
 *
 * @example
 * const overrides = new PolicyOverrides(store.overrides());
 * await overrides.start();
 * const api = new Limiter(store, { name: 'api', algorithm: 'fixed-window', limit: 100, window: '1m' }, { overrides });
 * await overrides.set(api.policy, { limit: 500 }, { scope: 'tenant:acme:', until: Date.now() + 3_600_000, reason: 'launch day' });
 */
export class PolicyOverrides {
  /** How often the store is polled, in ms. */
  readonly pollMs: number;
  private readonly warn: (message: string) => void;
  private readonly onChange: PolicyOverridesOptions['onChange'];
  /** Everything read from the store, in force or not. */
  private stored: readonly PolicyOverride[] = [];
  /** The store version {@link stored} was read at (-1: never read). */
  private readVersion = -1;
  /** The store's stamp when {@link stored} was read. */
  private readStamp: string | undefined;
  /** Which stored overrides were in force when the table was built (their versions, joined). */
  private inForce = '';
  /** Per base policy, its overrides in force (null: none), built on first use after each change. */
  private entries = new WeakMap<ResolvedPolicy, PolicyEntry | null>();
  /** Every effective policy handed out, by its limits array (what a request and receipt carry). */
  private readonly byLimits = new WeakMap<readonly LimitRule[], EffectivePolicy>();
  /** Warnings already given (per stored version and text), so a poll does not repeat them. */
  private readonly warned = new Set<string>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private polling: Promise<void> | undefined;

  constructor(
    /** Where the overrides are stored: `store.overrides()`. */
    readonly book: OverrideBook,
    options: PolicyOverridesOptions = {},
  ) {
    checkOptions(options, OPTIONS, 'PolicyOverrides options');
    const pollMs = options.pollMs ?? 500;
    if (!Number.isSafeInteger(pollMs) || pollMs < 50 || pollMs > 60_000) {
      throw new RangeError(
        `PolicyOverrides options.pollMs must be whole ms from 50 to 60000; got ${String(pollMs)}`,
      );
    }
    this.pollMs = pollMs;
    this.warn =
      options.onWarning ?? ((message) => process.emitWarning(message, 'RedlimitOverrideWarning'));
    this.onChange = options.onChange;
  }

  /** The store version the overrides in force here were read at (-1 before the first read). */
  get version(): number {
    return this.readVersion;
  }

  /** Reads the overrides once, then polls every `pollMs` (an unref'd timer) until {@link stop}. */
  async start(): Promise<void> {
    if (this.timer === undefined) this.startTimer();
    await this.refresh();
  }

  private startTimer(): void {
    this.timer = setInterval(() => {
      this.polling ??= this.refresh()
        .then(() => undefined)
        .catch((error: unknown) => {
          this.warnOnce(
            `poll:${(error as Error).message}`,
            `redlimit: could not read policy overrides (${(error as Error).message}); the ones last read stay in force`,
          );
        })
        .finally(() => {
          this.polling = undefined;
        });
    }, this.pollMs);
    this.timer.unref?.();
  }

  /** Stops polling (the overrides last read stay in force). */
  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * Asks the store for its version and reads the overrides when it moved; also applies overrides
   * whose `from` or `until` passed since. Resolves whether what is in force here changed.
   */
  async refresh(): Promise<boolean> {
    try {
      await this.read();
    } catch (error) {
      // A `from` or `until` passes on time even while the store cannot be read.
      this.rebuildIfDue();
      throw error;
    }
    return this.rebuildIfDue();
  }

  /** Reads the overrides when the store's stamp moved (a write, or the store lost them). */
  private async read(): Promise<void> {
    const stamp = await this.book.stamp();
    if (stamp !== this.readStamp) {
      const { version: read, overrides, unreadable, stamp: listed } = await this.book.list();
      for (const text of unreadable) {
        this.warnOnce(
          `unreadable:${text}`,
          `redlimit: a stored policy override this version cannot read is ignored: ${text.slice(0, 200)}`,
        );
      }
      this.stored = overrides;
      this.readVersion = read;
      this.readStamp = listed;
    }
  }

  /**
   * The policy a call on `keys` runs under, when an override of `base` is in force for them;
   * undefined otherwise (then `base` itself). Reads nothing from the store.
   */
  effective(base: ResolvedPolicy, keys: readonly string[]): EffectivePolicy | undefined {
    let entry = this.entries.get(base);
    if (entry === undefined) {
      entry = this.build(base);
      this.entries.set(base, entry);
    }
    return entry === null ? undefined : entry.resolve(keys);
  }

  /** The effective policy a request's (or receipt's) limits came from, if an override made them. */
  ofLimits(limits: readonly LimitRule[]): EffectivePolicy | undefined {
    return this.byLimits.get(limits);
  }

  /**
   * Stores an override of `base` (validated first, as a policy is: a bad one is refused with the
   * policy's messages and nothing is stored), then reads it back so it is in force here at once.
   *
   * @throws TypeError / RangeError naming what is wrong, before the store is touched
   */
  async set(
    base: ResolvedPolicy,
    change: PolicyChange,
    options: OverrideOptions = {},
  ): Promise<PolicyOverride> {
    checkOptions(options, SET_OPTIONS, 'override options');
    applyChange(base, change);
    const scope = checkScope(options.scope);
    const from = checkInstant(options.from, 'from');
    const until = checkInstant(options.until, 'until');
    if (from !== undefined && until !== undefined && until <= from) {
      throw new RangeError(`override until (${until}) must be after from (${from})`);
    }
    if (until !== undefined && until <= this.book.now()) {
      throw new RangeError(`override until (${new Date(until).toISOString()}) has already passed`);
    }
    const actor = checkNote(options.actor, 'actor') ?? 'code';
    const reason = checkNote(options.reason, 'reason');
    const stored = await this.book.set({
      policy: base.name,
      scope,
      change: JSON.parse(JSON.stringify(change)) as PolicyChange,
      ...(from !== undefined && { from }),
      ...(until !== undefined && { until }),
      actor,
      ...(reason !== undefined && { reason }),
    });
    await this.refresh();
    return stored;
  }

  /**
   * Removes the override of a policy for a scope, then reads the overrides back. Resolves whether
   * there was one.
   */
  async clear(policy: string, options: ClearOverrideOptions = {}): Promise<boolean> {
    checkOptions(options, CLEAR_OPTIONS, 'clearOverride options');
    if (typeof policy !== 'string' || !NAME_PATTERN.test(policy)) {
      throw new TypeError(
        `clearOverride: a policy name is 1-64 of letters, digits and _.:- ; got ${JSON.stringify(policy)}`,
      );
    }
    const scope = checkScope(options.scope);
    const actor = checkNote(options.actor, 'actor') ?? 'code';
    const reason = checkNote(options.reason, 'reason');
    const removed = await this.book.unset({
      policy,
      scope,
      actor,
      ...(reason !== undefined && { reason }),
    });
    await this.refresh();
    return removed;
  }

  /** The overrides stored now (in force or not), read from the store. */
  async list(): Promise<readonly PolicyOverride[]> {
    return (await this.book.list()).overrides;
  }

  /** The overrides in force here now, as last read. */
  inForceNow(): readonly PolicyOverride[] {
    const now = this.book.now();
    return this.stored.filter((o) => inForceAt(o, now));
  }

  /** The latest `count` changes (default 100), newest first. */
  async history(count = 100): Promise<OverrideHistoryEntry[]> {
    if (!Number.isSafeInteger(count) || count < 1 || count > 10_000) {
      throw new RangeError(`history count must be a whole number from 1 to 10000; got ${count}`);
    }
    return this.book.history(count);
  }

  /** Rebuilds the table when the set in force changed (a read, or a from / until passed). */
  private rebuildIfDue(): boolean {
    const now = this.book.now();
    const current = this.stored.filter((o) => inForceAt(o, now));
    const inForce = current.map((o) => `${o.version}`).join(',');
    if (inForce === this.inForce) return false;
    const first = this.inForce === '' && current.length === 0;
    this.inForce = inForce;
    this.entries = new WeakMap();
    if (!first) {
      try {
        this.onChange?.(current, this.readVersion);
      } catch (error) {
        this.warn(`redlimit: the overrides' onChange threw: ${(error as Error).message}`);
      }
    }
    return true;
  }

  private build(base: ResolvedPolicy): PolicyEntry | null {
    const now = this.book.now();
    const mine = this.stored
      .filter((o) => o.policy === base.name && inForceAt(o, now))
      .sort((a, b) => a.scope.length - b.scope.length || a.version - b.version);
    if (mine.length === 0) return null;
    const global = mine.find((o) => o.scope === '');
    const globalEffective = global === undefined ? undefined : this.layer(base, [global]);
    const byLength = new Map<number, Map<string, EffectivePolicy>>();
    for (const override of mine) {
      if (override.scope === '') continue;
      // Every override whose scope is a prefix of this one applies first, the longest last.
      const layers = mine.filter((o) => override.scope.startsWith(o.scope));
      const effective = this.layer(base, layers);
      if (effective === undefined) continue;
      let byPrefix = byLength.get(override.scope.length);
      if (byPrefix === undefined) {
        byPrefix = new Map<string, EffectivePolicy>();
        byLength.set(override.scope.length, byPrefix);
      }
      byPrefix.set(override.scope, effective);
    }
    const scoped = [...byLength.entries()].sort(([a], [b]) => b - a);
    if (globalEffective === undefined && scoped.length === 0) return null;
    return new PolicyEntry(base, globalEffective, scoped, (made) =>
      this.byLimits.set(made.policy.limits, made),
    );
  }

  /** `base` with each override's change applied in turn; one that does not apply is skipped (warned). */
  private layer(
    base: ResolvedPolicy,
    overrides: readonly PolicyOverride[],
  ): EffectivePolicy | undefined {
    let policy = base;
    let version = -1;
    for (const override of overrides) {
      try {
        policy = applyChange(policy, override.change);
        version = Math.max(version, override.version);
      } catch (error) {
        this.warnOnce(
          `invalid:${override.version}:${base.name}`,
          `redlimit: the override of policy '${base.name}' for scope '${override.scope}' (version ${override.version}) is ignored: ${(error as Error).message}`,
        );
      }
    }
    if (version < 0) return undefined;
    const effective: EffectivePolicy = Object.freeze({ policy, version });
    this.byLimits.set(policy.limits, effective);
    return effective;
  }

  private warnOnce(key: string, message: string): void {
    if (this.warned.has(key)) return;
    if (this.warned.size > 1_000) this.warned.clear();
    this.warned.add(key);
    this.warn(message);
  }
}

/** Whether an override is in force at `now` (store clock). */
export function inForceAt(override: PolicyOverride, now: number): boolean {
  return (
    (override.from === undefined || override.from <= now) &&
    (override.until === undefined || now < override.until)
  );
}
