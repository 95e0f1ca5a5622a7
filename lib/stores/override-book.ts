import type {
  OverrideHistoryEntry,
  PolicyChange,
  PolicyOverride,
  OverrideWrite,
} from '../core/overrides';

/** Most history entries kept (a capped stream on Redis). */
export const MAX_OVERRIDE_HISTORY = 10_000;
/** How long the history is kept after its last entry: a year. */
export const OVERRIDE_HISTORY_KEEP_MS = 366 * 86_400_000;
/** The format of a stored override this version writes (a newer one is not read). */
export const OVERRIDE_FORMAT = 1;

/** The field an override is stored under: its policy and scope. */
export function overrideField(policy: string, scope: string): string {
  return `${policy}\n${scope}`;
}

/** An override's JSON as stored (without its version and time, which the store stamps). */
export function overrideJson(write: OverrideWrite): string {
  return JSON.stringify({ f: OVERRIDE_FORMAT, ...write });
}

/**
 * An override read back from `<version>:<at>:<until>:<json>`, or undefined when this version of
 * redlimit cannot read it (a newer format, or not an override at all).
 */
export function parseOverride(value: string): PolicyOverride | undefined {
  const match = /^(\d+):(\d+):(\d*):([\s\S]*)$/.exec(value);
  if (!match) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(match[4]!);
  } catch {
    return undefined;
  }
  if (json === null || typeof json !== 'object') return undefined;
  const { f, policy, scope, change, from, until, actor, reason } = json as Record<string, unknown>;
  if (f !== OVERRIDE_FORMAT) return undefined;
  if (typeof policy !== 'string' || typeof scope !== 'string' || typeof actor !== 'string') {
    return undefined;
  }
  if (change === null || typeof change !== 'object' || Array.isArray(change)) return undefined;
  if (from !== undefined && typeof from !== 'number') return undefined;
  if (until !== undefined && typeof until !== 'number') return undefined;
  if (reason !== undefined && typeof reason !== 'string') return undefined;
  return Object.freeze({
    policy,
    scope,
    change,
    ...(from !== undefined && { from }),
    ...(until !== undefined && { until }),
    version: Number(match[1]),
    at: Number(match[2]),
    actor,
    ...(reason !== undefined && { reason }),
  });
}

/** A history entry from its stored JSON, or undefined when unreadable. */
export function parseHistory(
  version: number,
  at: number,
  json: string,
): OverrideHistoryEntry | undefined {
  let entry: unknown;
  try {
    entry = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (entry === null || typeof entry !== 'object') return undefined;
  const { action, policy, scope, actor } = entry as Record<string, unknown>;
  if ((action !== 'set' && action !== 'unset') || typeof policy !== 'string') return undefined;
  if (typeof scope !== 'string' || typeof actor !== 'string') return undefined;
  const { change, from, until, reason } = entry as Record<string, unknown>;
  return Object.freeze({
    action,
    policy,
    scope,
    ...(change !== undefined && { change: change as PolicyChange }),
    ...(typeof from === 'number' && { from }),
    ...(typeof until === 'number' && { until }),
    version,
    at,
    actor,
    ...(typeof reason === 'string' && { reason }),
  });
}
