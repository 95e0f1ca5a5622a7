import { parseDuration } from '../core/duration.util';
import type { OverrideHistoryEntry, PolicyChange, PolicyOverride } from '../core/overrides';
import { PolicyOverrides } from '../core/policy-overrides';
import type { ResolvedPolicy } from '../core/policy';
import type { RedisStore } from '../stores/redis.store';
import { columns } from './cli-format.util';
import { storeError, usageError } from './cli.error';
import type { CommandOutput } from './policies.command';
import type { OverrideFlags } from './cli-args.util';

/**
 * The change `redlimit policies set` asks for, from its flags (checked for shape here, against
 * the policy by {@link PolicyOverrides.set}).
 *
 * @throws CliError (exit code 2) naming the flag
 */
export function changeOf(flags: OverrideFlags): PolicyChange {
  const whole = (value: string, flag: string): number => {
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value)) || Number(value) < 1) {
      throw usageError(`${flag} ${JSON.stringify(value)}: expected a whole number ≥ 1`);
    }
    return Number(value);
  };
  const change: Record<string, unknown> = {};
  if (flags.limit !== undefined) change.limit = whole(flags.limit, '--limit');
  if (flags.burst !== undefined) change.burst = whole(flags.burst, '--burst');
  if (flags.limits !== undefined) {
    change.limits = flags.limits.split(',').map((part) => {
      const match = /^\s*(\d+)\/(\S+)\s*$/.exec(part);
      if (!match) {
        throw usageError(
          `--limits ${JSON.stringify(flags.limits)}: expected N/WINDOW,… (e.g. 100/1m,1000/1d)`,
        );
      }
      return { limit: whole(match[1]!, '--limits'), window: match[2]! };
    });
  }
  if (flags.shadow !== undefined) {
    if (flags.shadow !== 'true' && flags.shadow !== 'false') {
      throw usageError(`--shadow ${JSON.stringify(flags.shadow)}: expected true or false`);
    }
    change.shadow = flags.shadow === 'true';
  }
  if (flags.failMode !== undefined) {
    if (!['closed', 'open', 'memory'].includes(flags.failMode)) {
      throw usageError(
        `--fail-mode ${JSON.stringify(flags.failMode)}: expected closed, open or memory`,
      );
    }
    change.failMode = flags.failMode;
  }
  if (flags.block !== undefined) {
    change.block = flags.block === 'none' ? null : { duration: flags.block };
  }
  if (Object.keys(change).length === 0) {
    throw usageError(
      'policies set needs a change: --limit, --limits, --burst, --shadow, --fail-mode or --block',
    );
  }
  return change;
}

/**
 * An instant from `--from` / `--until`: an ISO time (`2026-12-24T18:00Z`) or a duration from now
 * (`90m`, `2h`).
 *
 * @throws CliError (exit code 2) naming the flag
 */
export function instantOf(
  value: string | undefined,
  flag: string,
  now: number,
): number | undefined {
  if (value === undefined) return undefined;
  if (/^\d+(\.\d+)?\s*(ms|s|m|h|d)$/.test(value.trim())) {
    try {
      return now + parseDuration(value, flag);
    } catch (error) {
      throw usageError(`${flag} ${JSON.stringify(value)}: ${(error as Error).message}`);
    }
  }
  const ms = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(value) || Number.isNaN(ms)) {
    throw usageError(
      `${flag} ${JSON.stringify(value)}: expected an ISO time (2026-12-24T18:00:00Z) or a duration from now (90m, 2h)`,
    );
  }
  return ms;
}

/** What `policies set / unset` do, with who and why. */
export interface OverrideCall {
  readonly scope?: string;
  readonly from?: string;
  readonly until?: string;
  readonly reason?: string;
  readonly actor: string;
}

/**
 * `redlimit policies set <policy> …`: stores an override of a configured policy (validated as the
 * app validates it), in force on every instance within its `overridesPollMs`.
 *
 * @throws CliError (exit code 2) for a bad change, before Redis is touched; (3) when Redis fails
 */
export async function setOverrideCommand(
  store: RedisStore,
  policy: ResolvedPolicy,
  change: PolicyChange,
  call: OverrideCall,
): Promise<CommandOutput> {
  const overrides = new PolicyOverrides(store.overrides());
  const now = Date.now();
  const from = instantOf(call.from, '--from', now);
  const until = instantOf(call.until, '--until', now);
  let stored: PolicyOverride;
  try {
    stored = await overrides.set(policy, change, {
      ...(call.scope !== undefined && { scope: call.scope }),
      ...(from !== undefined && { from }),
      ...(until !== undefined && { until }),
      actor: call.actor,
      ...(call.reason !== undefined && { reason: call.reason }),
    });
  } catch (error) {
    throw asCliError(error);
  }
  return {
    json: { override: stored },
    text: `set: ${describe(stored)}`,
  };
}

/** `redlimit policies unset <policy> [--scope S]`: removes an override. */
export async function unsetOverrideCommand(
  store: RedisStore,
  policy: string,
  call: OverrideCall,
): Promise<CommandOutput> {
  let removed: boolean;
  try {
    removed = await new PolicyOverrides(store.overrides()).clear(policy, {
      ...(call.scope !== undefined && { scope: call.scope }),
      actor: call.actor,
      ...(call.reason !== undefined && { reason: call.reason }),
    });
  } catch (error) {
    throw asCliError(error);
  }
  const where = call.scope ? `for keys starting ${JSON.stringify(call.scope)}` : 'for every key';
  return {
    json: { policy, scope: call.scope ?? '', removed },
    text: removed
      ? `unset: ${policy} ${where} (the configured policy applies again)`
      : `nothing to unset: ${policy} has no override ${where}`,
  };
}

/** `redlimit policies list`: the overrides stored now, in force or not. */
export async function listOverridesCommand(store: RedisStore): Promise<CommandOutput> {
  let overrides: readonly PolicyOverride[];
  let now: number;
  try {
    const book = store.overrides();
    overrides = (await book.list()).overrides;
    now = book.now();
  } catch (error) {
    throw asCliError(error);
  }
  const rows = overrides.map((o) => [
    o.policy,
    o.scope === '' ? '(every key)' : o.scope,
    JSON.stringify(o.change),
    state(o, now),
    `v${o.version}`,
    o.actor,
    o.reason ?? '',
  ]);
  return {
    json: { overrides },
    text: rows.length === 0 ? 'no overrides: every policy is as configured' : columns(rows),
  };
}

/** `redlimit policies history [--count N]`: the latest changes, newest first. */
export async function overrideHistoryCommand(
  store: RedisStore,
  count: number,
): Promise<CommandOutput> {
  let entries: OverrideHistoryEntry[];
  try {
    entries = await store.overrides().history(count);
  } catch (error) {
    throw asCliError(error);
  }
  const rows = entries.map((e) => [
    new Date(e.at).toISOString(),
    `v${e.version}`,
    e.action,
    e.policy,
    e.scope === '' ? '(every key)' : e.scope,
    e.change !== undefined ? JSON.stringify(e.change) : '',
    e.until !== undefined ? `until ${new Date(e.until).toISOString()}` : '',
    e.actor,
    e.reason ?? '',
  ]);
  return {
    json: { history: entries },
    text: rows.length === 0 ? 'no changes recorded' : columns(rows),
  };
}

function state(o: PolicyOverride, now: number): string {
  if (o.from !== undefined && now < o.from) return `from ${new Date(o.from).toISOString()}`;
  if (o.until !== undefined) return `until ${new Date(o.until).toISOString()}`;
  return 'in force';
}

function describe(o: PolicyOverride): string {
  const where = o.scope === '' ? 'for every key' : `for keys starting ${JSON.stringify(o.scope)}`;
  const when = [
    o.from !== undefined ? `from ${new Date(o.from).toISOString()}` : '',
    o.until !== undefined ? `until ${new Date(o.until).toISOString()}` : '',
  ]
    .filter(Boolean)
    .join(' ');
  return `${o.policy} ${where}: ${JSON.stringify(o.change)}${when ? ` ${when}` : ''} (version ${o.version})`;
}

function asCliError(error: unknown): Error {
  if (error instanceof RangeError || error instanceof TypeError) return usageError(error.message);
  return storeError(`Redis failed: ${(error as Error).message}`);
}
