import { CHANGE_FIELDS } from '../core/overrides';
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

/** The longest stored override read (its text); a longer one is not an override of ours. */
export const MAX_OVERRIDE_TEXT = 16_384;

/** A flat object of scalars (a limit entry, a lockout), as JSON gives it. */
function isFlat(value: unknown): boolean {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  return Object.values(value).every(
    (v) => v === null || ['number', 'string', 'boolean'].includes(typeof v),
  );
}

/**
 * Whether a stored change has the shape of a {@link PolicyChange}: known fields only, each of its
 * kind, nothing nested deeper than a list of flat limits (what `applyChange` then validates).
 */
function isChangeShaped(change: unknown): change is PolicyChange {
  if (change === null || typeof change !== 'object' || Array.isArray(change)) return false;
  for (const [field, value] of Object.entries(change)) {
    if (!CHANGE_FIELDS.includes(field)) return false;
    if (field === 'limits') {
      if (!Array.isArray(value) || value.length > 16 || !value.every(isFlat)) return false;
    } else if (field === 'block') {
      if (value !== null && !isFlat(value)) return false;
    } else if (value !== null && typeof value === 'object') {
      return false;
    }
  }
  return true;
}

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
  if (value.length > MAX_OVERRIDE_TEXT) return undefined;
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
  if (!isChangeShaped(change)) return undefined;
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
    ...(change !== undefined && isChangeShaped(change) && { change }),
    ...(typeof from === 'number' && { from }),
    ...(typeof until === 'number' && { until }),
    version,
    at,
    actor,
    ...(typeof reason === 'string' && { reason }),
  });
}
