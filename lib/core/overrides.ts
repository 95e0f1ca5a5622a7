import { ALGORITHM_DEFINITIONS } from './algorithms/algorithm.registry';
import type { Duration } from './duration.util';
import { type BlockOptions, type BlockRule } from './policy-block';
import { type FailMode, type PolicyOptions, type ResolvedPolicy, resolvePolicy } from './policy';

/**
 * What a live override may change in a policy; every field left out stays as the policy says.
 * `window`, the number of limits and the algorithm cannot change at runtime: stored state is read
 * against its window (a fixed window's counter by the window's end, a sliding window by its
 * number, a bucket's backlog in units of it) and its algorithm, so a new window would start from
 * nothing and admit the old window's spends again. Change those with a deploy, under a new name.
 */
export interface PolicyChange {
  /** The limit of a policy with one limit (with `limits`, give each limit's there). */
  readonly limit?: number;
  /** `token-bucket` and `gcra`, one limit: the bucket's capacity. */
  readonly burst?: number;
  /**
   * Every limit of the policy, in its order: the same number of limits, each with its own
   * `limit` (and `burst` for buckets); a `window` given must be the policy's.
   */
  readonly limits?: ReadonlyArray<{
    /** Units allowed per window. */
    readonly limit: number;
    /** Buckets only: the capacity. */
    readonly burst?: number;
    /** Must be the policy's window for this limit (it cannot change). */
    readonly window?: Duration;
  }>;
  /** New lockouts, or `null` for none (lockouts running are then no longer checked). */
  readonly block?: BlockOptions | null;
  /** Shadow mode on or off. */
  readonly shadow?: boolean;
  /** The fail mode while the store fails. */
  readonly failMode?: FailMode;
}

/** An override as the store keeps it: a change of one policy, for everyone or for a scope. */
export interface PolicyOverride {
  /** The policy it changes. */
  readonly policy: string;
  /** `''` for every key, else the key prefix it applies to (a tenant: `tenant:acme:`). */
  readonly scope: string;
  /** What it changes. */
  readonly change: PolicyChange;
  /** In force from this instant (store clock, ms since 1970); absent: at once. */
  readonly from?: number;
  /** In force until this instant (store clock); absent: until removed. */
  readonly until?: number;
  /** The store's override version this write made (every set and unset moves it on by one). */
  readonly version: number;
  /** When it was set (store clock). */
  readonly at: number;
  /** Who set it. */
  readonly actor: string;
  /** Why, as given. */
  readonly reason?: string;
}

/** One change to the overrides, as the history keeps it (newest first when read). */
export interface OverrideHistoryEntry {
  /** `set` or `unset`. */
  readonly action: 'set' | 'unset';
  /** The policy. */
  readonly policy: string;
  /** The scope (`''`: every key). */
  readonly scope: string;
  /** For `set`: the change. */
  readonly change?: PolicyChange;
  /** For `set`: from when. */
  readonly from?: number;
  /** For `set`: until when. */
  readonly until?: number;
  /** The version this write made. */
  readonly version: number;
  /** When (store clock). */
  readonly at: number;
  /** Who. */
  readonly actor: string;
  /** Why. */
  readonly reason?: string;
}

/** An override to store: {@link PolicyOverride} less what the store stamps on it. */
export type OverrideWrite = Omit<PolicyOverride, 'version' | 'at'>;

/**
 * Where overrides live: `RedisStore.overrides()` (shared by the fleet, one Cluster slot) or
 * `MemoryStore.overrides()` (one process). Every write moves one version number on; readers poll
 * that number (one `GET`) and read the whole set only when it moved.
 */
export interface OverrideBook {
  /** The store's clock as this process estimates it (ms since 1970). */
  now(): number;
  /** The current version (0 before any write). */
  version(): Promise<number>;
  /**
   * An opaque text that changes with every write, and when the store lost its overrides (a
   * restart without persistence, a failover to a replica that missed writes) even if the version
   * number then repeats: what readers poll.
   */
  stamp(): Promise<string>;
  /**
   * Every stored override with the version it was read at. Entries this version of redlimit
   * cannot read come back as `unreadable` (their text), never as an error.
   */
  list(): Promise<{
    /** The version the overrides were read at. */
    readonly version: number;
    /** The stamp they were read at (see {@link OverrideBook.stamp}). */
    readonly stamp: string;
    /** Every stored override this version can read, oldest version first. */
    readonly overrides: readonly PolicyOverride[];
    /** The stored text of those it cannot read. */
    readonly unreadable: readonly string[];
  }>;
  /** Stores (or replaces) the override of `write.policy` for `write.scope`; resolves with it. */
  set(write: OverrideWrite): Promise<PolicyOverride>;
  /** Removes the override of a policy for a scope; resolves whether there was one. */
  unset(entry: {
    readonly policy: string;
    readonly scope: string;
    readonly actor: string;
    readonly reason?: string;
  }): Promise<boolean>;
  /** The latest `count` history entries, newest first. */
  history(count: number): Promise<OverrideHistoryEntry[]>;
}

/** The fields a {@link PolicyChange} may hold. */
export const CHANGE_FIELDS: readonly string[] = [
  'limit',
  'burst',
  'limits',
  'block',
  'shadow',
  'failMode',
];

/** Longest scope (a key prefix), in UTF-16 units. */
export const MAX_SCOPE_LENGTH = 512;
/** Longest actor or reason kept with an override. */
export const MAX_NOTE_LENGTH = 512;

/**
 * Checks a change against the policy it changes and gives the policy as it then stands, validated
 * as `resolvePolicy` validates a policy (the same messages), before anything is stored.
 *
 * @throws TypeError / RangeError naming the field
 * @example
 * applyChange(resolvePolicy({ name: 'api', algorithm: 'fixed-window', limit: 100, window: '1m' }), { limit: 500 }).limits;
 * // [{ limit: 500, windowMs: 60000, burst: 500 }]
 */
export function applyChange(base: ResolvedPolicy, change: unknown): ResolvedPolicy {
  const where = `override of policy '${base.name}'`;
  if (change === null || typeof change !== 'object' || Array.isArray(change)) {
    throw new TypeError(`${where}: the change must be an object; got ${describe(change)}`);
  }
  // A field given as undefined is no field (JSON would drop it: what is stored is what applies).
  const fields = Object.keys(change).filter(
    (field) => (change as Record<string, unknown>)[field] !== undefined,
  );
  if (fields.length === 0) throw new TypeError(`${where}: the change changes nothing`);
  for (const field of fields) {
    if (field === 'window' || field === 'algorithm') {
      throw new RangeError(
        `${where}: ${field} cannot change at runtime (stored state is read against the policy's ` +
          `window and algorithm: a new one would start from nothing and admit the old window's ` +
          `spends again); deploy it under a new policy name`,
      );
    }
    if (!CHANGE_FIELDS.includes(field)) {
      throw new TypeError(
        `${where}: '${field}' is not something an override changes (${CHANGE_FIELDS.join(', ')})`,
      );
    }
  }
  const c = change as PolicyChange;
  const usesBurst = ALGORITHM_DEFINITIONS[base.algorithm].usesBurst;
  const burstGiven =
    c.burst !== undefined ||
    (Array.isArray(c.limits) &&
      (c.limits as readonly unknown[]).some(
        (l) =>
          l !== null && typeof l === 'object' && (l as { burst?: unknown }).burst !== undefined,
      ));
  if (burstGiven && !usesBurst) {
    throw new RangeError(
      `${where}: burst applies to 'token-bucket' and 'gcra' only (this policy is '${base.algorithm}')`,
    );
  }
  if (usesBurst && (c.limit !== undefined || c.burst !== undefined || c.limits !== undefined)) {
    // A bucket's state is kept relative to its rate and capacity (gcra: the time until empty;
    // token bucket: the tokens left below capacity), so a new rate or capacity would rescale what
    // it holds and refunds by old receipts would no longer be exact.
    throw new RangeError(
      `${where}: the limit and burst of a '${base.algorithm}' policy cannot change at runtime yet ` +
        '(its stored state is relative to them); change block, shadow or failMode, or deploy a new limit',
    );
  }
  if ((c.limit !== undefined || c.burst !== undefined) && c.limits !== undefined) {
    throw new TypeError(`${where}: give limit/burst or limits, not both`);
  }
  if ((c.limit !== undefined || c.burst !== undefined) && base.limits.length > 1) {
    throw new TypeError(
      `${where}: the policy has ${base.limits.length} limits: give each in limits, in order`,
    );
  }
  let rules: Array<{ limit?: number; burst?: number }>;
  if (c.limits !== undefined) {
    const list: unknown = c.limits;
    if (!Array.isArray(list) || list.length !== base.limits.length) {
      throw new RangeError(
        `${where}: limits must list the policy's ${base.limits.length} limit(s), in order (their number cannot change at runtime)`,
      );
    }
    rules = (list as unknown[]).map((entry, i) => {
      if (entry === null || typeof entry !== 'object') {
        throw new TypeError(`${where}: limits[${i}] must be an object { limit, burst? }`);
      }
      const { limit, burst, window, ...rest } = entry as Record<string, unknown>;
      const unknownField = Object.keys(rest)[0];
      if (unknownField !== undefined) {
        throw new TypeError(
          `${where}: limits[${i}] has no field '${unknownField}' (limit, burst, window)`,
        );
      }
      if (window !== undefined && !sameWindow(window, base.limits[i]!.windowMs)) {
        throw new RangeError(
          `${where}: limits[${i}].window cannot change at runtime (it is ${base.limits[i]!.windowMs} ms); deploy a new window under a new policy name`,
        );
      }
      return { limit: limit as number, ...(burst !== undefined && { burst: burst as number }) };
    });
  } else {
    rules = base.limits.map((rule) => ({ limit: rule.limit }));
    rules[0] = {
      limit: c.limit ?? base.limits[0]!.limit,
      ...(c.burst !== undefined && { burst: c.burst }),
    };
  }
  const limits = base.limits.map((rule, i) => {
    const r = rules[i]!;
    // A bucket keeps a burst of its own; one whose burst was its limit follows the new limit.
    const burst = !usesBurst
      ? undefined
      : r.burst !== undefined
        ? r.burst
        : rule.burst !== rule.limit
          ? rule.burst
          : undefined;
    return {
      limit: r.limit as number,
      window: rule.windowMs,
      ...(burst !== undefined && { burst }),
    };
  });
  const block =
    c.block === null ? undefined : c.block !== undefined ? c.block : blockOptionsOf(base.block);
  if (c.shadow !== undefined && typeof c.shadow !== 'boolean') {
    throw new TypeError(`policy.shadow must be true or false; got ${JSON.stringify(c.shadow)}`);
  }
  const options: PolicyOptions = {
    name: base.name,
    algorithm: base.algorithm,
    limits,
    ...(c.failMode !== undefined
      ? { failMode: c.failMode }
      : base.failMode !== undefined
        ? { failMode: base.failMode }
        : {}),
    ...(base.warnAt !== undefined && { warnAt: base.warnAt }),
    ...(block !== undefined && { block }),
    ...((c.shadow ?? base.shadow) === true && { shadow: true }),
  };
  try {
    return resolvePolicy(options);
  } catch (error) {
    // The policy's own message, said of the override.
    if (error instanceof RangeError)
      throw new RangeError(`${where}: ${error.message}`, { cause: error });
    if (error instanceof TypeError)
      throw new TypeError(`${where}: ${error.message}`, { cause: error });
    throw error;
  }
}

/** A resolved lockout as the options that resolve to it again. */
export function blockOptionsOf(rule: BlockRule | undefined): BlockOptions | undefined {
  if (rule === undefined) return undefined;
  return {
    duration: rule.durationMs,
    factor: rule.factor,
    max: rule.maxMs,
    forgetAfter: rule.forgetAfterMs,
    restart: rule.restart,
  };
}

function sameWindow(window: unknown, windowMs: number): boolean {
  if (typeof window === 'number') return window === windowMs;
  if (typeof window !== 'string') return false;
  try {
    return (
      resolvePolicy({ name: 'w', algorithm: 'fixed-window', limit: 1, window }).limits[0]!
        .windowMs === windowMs
    );
  } catch {
    return false;
  }
}

/**
 * Checks a scope: `''` (every key) or a key prefix of at most {@link MAX_SCOPE_LENGTH} characters
 * of well-formed text.
 *
 * @throws TypeError / RangeError naming what is wrong
 */
export function checkScope(scope: unknown): string {
  if (scope === undefined) return '';
  if (typeof scope !== 'string') {
    throw new TypeError(`override scope must be a string (a key prefix); got ${describe(scope)}`);
  }
  if (scope.length > MAX_SCOPE_LENGTH) {
    throw new RangeError(
      `override scope is ${scope.length} characters; at most ${MAX_SCOPE_LENGTH}`,
    );
  }
  if (!scope.isWellFormed()) {
    throw new RangeError('override scope is not well-formed text (a lone surrogate)');
  }
  return scope;
}

/**
 * An instant for `from` / `until`: a `Date` or ms since 1970.
 *
 * @throws TypeError / RangeError naming the option
 */
export function checkInstant(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0) {
    throw new RangeError(
      `override ${name} must be a Date or whole ms since 1970; got ${describe(value)}`,
    );
  }
  return ms;
}

/** A short, one-line note (actor, reason), or undefined. */
export function checkNote(value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length > MAX_NOTE_LENGTH || !value.isWellFormed()) {
    throw new TypeError(`override ${name} must be text of at most ${MAX_NOTE_LENGTH} characters`);
  }
  return value;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value);
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : typeof value;
}
