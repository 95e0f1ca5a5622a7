import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Algorithm } from '../core/policy';

/** Where the shipped Lua sources live: `<package>/lua`, two levels above `lib/stores` and `dist/stores`. */
const LUA_ROOT = join(__dirname, '..', '..', 'lua');

/** `--#include lib/x.lua` on a line of its own splices in that file (paths from `lua/`). */
const INCLUDE = /^--#include (\S+)$/gm;

/** A script as registered on an ioredis client. */
export interface ScriptSource {
  /** Command name on the client (`defineCommand`). */
  readonly command: string;
  /** Lua source, includes resolved. */
  readonly lua: string;
}

/** Which script: an algorithm's `consume` or `refund`, the shared `reset`, or `stack/consume` (several policies as one decision). */
export type ScriptId =
  `${Algorithm}/${'consume' | 'refund'}` | 'reset/reset' | 'stack/consume' | 'batch/consume';

const cache = new Map<ScriptId, ScriptSource>();

/** Reads `lua/<id>.lua` (with its includes) once per process. */
export function scriptFor(id: ScriptId): ScriptSource {
  let script = cache.get(id);
  if (!script) {
    script = { command: `redlimit_${id.replace(/[-/]/g, '_')}`, lua: load(`${id}.lua`) };
    cache.set(id, script);
  }
  return script;
}

function load(path: string, including: readonly string[] = []): string {
  if (including.includes(path)) {
    throw new Error(`lua/${path} includes itself (through ${including.join(' → ')})`);
  }
  const source = readFileSync(join(LUA_ROOT, path), 'utf8');
  return source.replace(INCLUDE, (_line, included: string) =>
    load(included, [...including, path]).trimEnd(),
  );
}
