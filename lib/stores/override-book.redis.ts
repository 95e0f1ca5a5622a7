import { randomBytes } from 'node:crypto';
import type {
  OverrideBook,
  OverrideHistoryEntry,
  OverrideWrite,
  PolicyOverride,
} from '../core/overrides';
import {
  MAX_OVERRIDE_HISTORY,
  OVERRIDE_HISTORY_KEEP_MS,
  overrideField,
  overrideJson,
  parseHistory,
  parseOverride,
} from './override-book';
import type { ScriptId } from './scripts';

/** Runs one of the store's scripts (in issue order with the store's other operations). */
export type OverrideScriptRunner = (
  id: Extract<ScriptId, `overrides/${string}`>,
  keys: string[],
  args: Array<string | number>,
) => Promise<unknown>;

/**
 * Live policy overrides in Redis (`RedisStore.overrides()`): every key under `<prefix>{overrides}:`,
 * one Cluster slot; each read or write is one script run (lua/overrides/*.lua). The overrides and
 * their version never expire; the history (a capped stream) is kept a year after its last entry.
 */
export class RedisOverrideBook implements OverrideBook {
  private readonly keys: string[];

  constructor(
    prefix: string,
    private readonly run: OverrideScriptRunner,
    /** The store's clock as estimated here (ms since 1970). */
    private readonly clock: () => number,
    /** `''` (Redis TIME) or the store's custom clock, as the scripts' ARGV[1]. */
    private readonly scriptNow: () => string,
  ) {
    const base = `${prefix}{overrides}`;
    this.keys = [`${base}:set`, `${base}:version`, `${base}:history`, `${base}:generation`];
  }

  now(): number {
    return Math.floor(this.clock());
  }

  async version(): Promise<number> {
    return Number(await this.read('version'));
  }

  async stamp(): Promise<string> {
    return String(await this.read('stamp'));
  }

  async list(): Promise<{
    version: number;
    stamp: string;
    overrides: PolicyOverride[];
    unreadable: string[];
  }> {
    const reply = (await this.read('list')) as Array<string | number>;
    const now = Number(reply[1]);
    const overrides: PolicyOverride[] = [];
    const unreadable: string[] = [];
    for (let i = 3; i + 1 < reply.length; i += 2) {
      const parsed = parseOverride(String(reply[i + 1]));
      if (parsed === undefined) unreadable.push(String(reply[i + 1]));
      else if (parsed.until === undefined || parsed.until > now) overrides.push(parsed); // (passed: gone at the next write)
    }
    overrides.sort((a, b) => a.version - b.version);
    return { version: Number(reply[0]), stamp: String(reply[2]), overrides, unreadable };
  }

  async set(write: OverrideWrite): Promise<PolicyOverride> {
    const [version, at] = await this.write('set', write.policy, write.scope, write, {
      action: 'set',
      ...write,
    });
    return Object.freeze({ ...write, version, at });
  }

  async unset(entry: {
    policy: string;
    scope: string;
    actor: string;
    reason?: string;
  }): Promise<boolean> {
    const [, , changed] = await this.write('unset', entry.policy, entry.scope, undefined, {
      action: 'unset',
      ...entry,
    });
    return changed === 1;
  }

  async history(count: number): Promise<OverrideHistoryEntry[]> {
    const reply = (await this.run('overrides/read', this.keys, [
      this.scriptNow(),
      0,
      0,
      'history',
      '',
      count,
    ])) as Array<[string, string[]]>;
    const entries: OverrideHistoryEntry[] = [];
    for (const [, fields] of reply) {
      const get = (name: string) => {
        const i = fields.indexOf(name);
        return i >= 0 && i % 2 === 0 ? fields[i + 1] : undefined;
      };
      const parsed = parseHistory(Number(get('v')), Number(get('at')), get('e') ?? '');
      if (parsed !== undefined) entries.push(parsed);
    }
    return entries;
  }

  private read(mode: 'version' | 'stamp' | 'list'): Promise<unknown> {
    return this.run('overrides/read', this.keys, [this.scriptNow(), 0, 0, mode, '', 0]);
  }

  private async write(
    action: 'set' | 'unset',
    policy: string,
    scope: string,
    write: OverrideWrite | undefined,
    history: object,
  ): Promise<[number, number, number]> {
    const reply = (await this.run('overrides/write', this.keys, [
      this.scriptNow(),
      0,
      0,
      action,
      randomBytes(9).toString('base64url'),
      overrideField(policy, scope),
      write === undefined ? '' : overrideJson(write),
      write?.until ?? '',
      JSON.stringify(history),
      MAX_OVERRIDE_HISTORY,
      OVERRIDE_HISTORY_KEEP_MS,
    ])) as number[];
    return [Number(reply[0]), Number(reply[1]), Number(reply[2])];
  }
}
