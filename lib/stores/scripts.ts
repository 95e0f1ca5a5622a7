import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Algorithm } from '../core/policy';

/** Where the shipped Lua sources live: `<package>/lua`, two levels above `lib/stores` and `dist/stores`. */
const LUA_ROOT = join(__dirname, '..', '..', 'lua');

/** The operations each algorithm implements as a script. */
export type ScriptOperation = 'consume' | 'refund';

/** A script as registered on an ioredis client. */
export interface ScriptSource {
  /** Command name on the client (`defineCommand`). */
  readonly command: string;
  /** Lua source. */
  readonly lua: string;
}

const cache = new Map<string, ScriptSource>();

/** Reads `lua/<algorithm>/<operation>.lua` once per process. */
export function scriptFor(algorithm: Algorithm, operation: ScriptOperation): ScriptSource {
  const id = `${algorithm}/${operation}`;
  let script = cache.get(id);
  if (!script) {
    const command = `redlimit_${algorithm.replace('-', '_')}_${operation}`;
    script = { command, lua: readFileSync(join(LUA_ROOT, `${id}.lua`), 'utf8') };
    cache.set(id, script);
  }
  return script;
}
