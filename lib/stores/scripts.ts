import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ALGORITHM_DEFINITIONS } from '../core/algorithms/algorithm.registry';
import { type Algorithm, POLICY_ALGORITHMS } from '../core/policy';

/** Where the shipped Lua sources live: `<package>/lua`, two levels above `lib/stores` and `dist/stores`. */
const LUA_ROOT = join(__dirname, '..', '..', 'lua');

/** `--#include lib/x.lua` on a line of its own splices in that file (paths from `lua/`). */
const INCLUDE = /^--#include (\S+)$/gm;

/** `--#models` on a line of its own (lib/models.lua): one block per algorithm, see {@link modelBlocks}. */
const MODELS = /^--#models$/gm;

/**
 * What `--#models` stands for: each algorithm's `<name>/model.lua` in a block of its own (so the
 * models' local helpers never meet), stored in `models[name]` with the definition's
 * `keepsSpendIds` as `ids`. Derived from the algorithm registry, so an algorithm's Lua needs no
 * entry in a shared file.
 */
function modelBlocks(): string {
  return POLICY_ALGORITHMS.map(
    (name) =>
      `do\n--#include ${name}/model.lua\n` +
      `  models['${name}'] = { evaluate = evaluate, commit = commit, reset = resetIn, ` +
      `ids = ${String(ALGORITHM_DEFINITIONS[name].keepsSpendIds)} }\nend`,
  ).join('\n');
}

/** Which script: an algorithm's `consume` or `refund`, a lease's `extend`, the shared `reset`, `stack/consume` (several policies as one decision), `batch/consume`, or a device epoch's `read` and `bump`, or the fleet's heartbeat and a fallback's lockout, or the ops board's book, or the live policy overrides. */
export type ScriptId =
  | `${Algorithm}/${'consume' | 'refund'}`
  | 'concurrency/extend'
  | 'reset/reset'
  | 'stack/consume'
  | 'batch/consume'
  | 'epoch/read'
  | 'epoch/bump'
  | 'fleet/beat'
  | 'fleet/lock'
  | 'board/write'
  | 'board/read'
  | 'board/audit'
  | 'overrides/write'
  | 'overrides/read';

/** Every script, in the order the library registers them. */
export const SCRIPT_IDS: readonly ScriptId[] = [
  ...POLICY_ALGORITHMS.flatMap((a): ScriptId[] => [`${a}/consume`, `${a}/refund`]),
  'concurrency/extend',
  'reset/reset',
  'stack/consume',
  'batch/consume',
  'epoch/read',
  'epoch/bump',
  'fleet/beat',
  'fleet/lock',
  'board/write',
  'board/read',
  'board/audit',
  'overrides/write',
  'overrides/read',
];

/**
 * Every script of this version as one Redis Functions library (`FUNCTION LOAD`), and each as a
 * standalone script (`EVAL`) for servers where functions are unavailable or not permitted.
 *
 * Each script file defines its helpers and a `main()`; lib/prelude.lua, at the top, declares what
 * every call shares and `begin(keys, args)`. In the library, everything but `begin` and `main` is
 * built once, when the library loads, instead of on every call, as an `EVAL` script must.
 *
 * The library and function names carry a hash of the sources, so processes running different
 * versions of redlimit against one Redis each find their own functions.
 */
export interface ScriptLibrary {
  /** `redlimit_<hash>`. */
  readonly name: string;
  /** The `FUNCTION LOAD` source (with its `#!lua name=…` shebang). */
  readonly source: string;
  /** The registered function of one script. */
  functionName(id: ScriptId): string;
  /** One script as an `EVAL` script (prelude, script, then a call of its `main`). */
  evalSource(id: ScriptId): string;
}

let library: ScriptLibrary | undefined;

/** The library of this version (read from `lua/` once per process). */
export function scriptLibrary(): ScriptLibrary {
  if (library) return library;
  const prelude = load('lib/prelude.lua').trimEnd();
  const scripts = new Map(SCRIPT_IDS.map((id) => [id, load(`${id}.lua`).trimEnd()]));
  const hash = createHash('sha1')
    .update(prelude)
    .update([...scripts.values()].join('\n'))
    .digest('hex')
    .slice(0, 12);
  const name = `redlimit_${hash}`;
  const names = new Map(SCRIPT_IDS.map((id) => [id, `${name}_${id.replace(/[-/]/g, '_')}`]));
  const functionName = (id: ScriptId) => names.get(id)!;
  const blocks = SCRIPT_IDS.map(
    (id) =>
      `do\n${scripts.get(id)!}\n` +
      `redis.register_function('${functionName(id)}', function(keys, args) begin(keys, args) return main() end)\n` +
      `end`,
  );
  const evalSources = new Map<ScriptId, string>();
  library = {
    name,
    source: [`#!lua name=${name}`, prelude, ...blocks, ''].join('\n'),
    functionName,
    evalSource(id) {
      let source = evalSources.get(id);
      if (source === undefined) {
        source = [
          'local GLOBAL_KEYS, GLOBAL_ARGV = KEYS, ARGV',
          prelude,
          scripts.get(id)!,
          'begin(GLOBAL_KEYS, GLOBAL_ARGV)',
          'return main()',
          '',
        ].join('\n');
        evalSources.set(id, source);
      }
      return source;
    },
  };
  return library;
}

function load(path: string, including: readonly string[] = []): string {
  if (including.includes(path)) {
    throw new Error(`lua/${path} includes itself (through ${including.join(' → ')})`);
  }
  const source = stripComments(readFileSync(join(LUA_ROOT, path), 'utf8')).replace(
    MODELS,
    modelBlocks,
  );
  return source.replace(INCLUDE, (_line, included: string) =>
    load(included, [...including, path]).trimEnd(),
  );
}

/** Without block comments (`--[[ … ]]` opening a line) and whole-line comments (`--#include` and `--#models` kept). */
function stripComments(source: string): string {
  return source
    .replace(/^\s*--\[\[[\s\S]*?\]\]\s*$/gm, '')
    .replace(/^\s*--(?!#include |#models$).*$/gm, '')
    .replace(/\n{2,}/g, '\n');
}
