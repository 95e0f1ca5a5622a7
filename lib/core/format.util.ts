// How durations and limits read for people: the CLI's output and the ops board's pages.
import type { LimitRule, ResolvedPolicy } from './policy';

const UNITS: ReadonlyArray<readonly [string, number]> = [
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1_000],
];

/**
 * A wait for people: whole seconds rounded up, in d/h/m/s (`'14m 51s'`); under a second, ms.
 *
 * @example
 * formatWait(891_200); // '14m 52s'
 */
export function formatWait(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))} ms`;
  let rest = Math.ceil(ms / 1000) * 1000;
  const parts: string[] = [];
  for (const [unit, size] of UNITS) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  return parts.join(' ');
}

/**
 * A window in the largest unit that divides it, as in `REDLIMIT_POLICIES` (`'15m'`, `'1500ms'`).
 *
 * @example
 * formatWindow(900_000); // '15m'
 */
export function formatWindow(ms: number): string {
  for (const [unit, size] of UNITS) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/**
 * A policy's limits in the `REDLIMIT_POLICIES` syntax: `100/1m+2000/1h`, `10/1s~50`.
 *
 * @example
 * formatLimits(resolvePolicy({ name: 'api', algorithm: 'gcra', limit: 10, window: '1s', burst: 50 })); // '10/1s~50'
 */
export function formatLimits(policy: ResolvedPolicy): string {
  return policy.limits.map((rule) => formatLimit(rule)).join('+');
}

function formatLimit(rule: LimitRule): string {
  const burst = rule.burst !== rule.limit ? `~${rule.burst}` : '';
  return `${rule.limit}/${formatWindow(rule.windowMs)}${burst}`;
}
