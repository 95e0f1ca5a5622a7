// The algorithm registry is complete and consistent: every name of the public `Algorithm` type has
// a definition, a Lua folder with its scripts, and a memory model, so an algorithm added halfway
// fails here with a message naming what is missing (see CONTRIBUTING.md, "Adding an algorithm").
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';
import type { Algorithm } from '../../lib/core/algorithms/algorithm-definition';
import {
  ALGORITHM_DEFINITIONS,
  ALGORITHM_NAMES,
  RATE_ALGORITHM_NAMES,
} from '../../lib/core/algorithms/algorithm.registry';
import { ALGORITHMS, POLICY_ALGORITHMS, resolvePolicy } from '../../lib/core/policy';
import { MEMORY_MODELS } from '../../lib/stores/memory/memory-models';
import { scriptLibrary } from '../../lib/stores/scripts';

const ROOT = join(__dirname, '..', '..');
const LUA = join(ROOT, 'lua');
const DEFINITION_FILE = join(ROOT, 'lib', 'core', 'algorithms', 'algorithm-definition.ts');

/** The Lua folders that hold no algorithm: shared fragments and the multi-policy scripts. */
const NOT_ALGORITHMS = new Set([
  'lib',
  'batch',
  'stack',
  'reset',
  'epoch',
  'fleet',
  'board',
  'overrides',
]);

/** The string literals of a union type alias of algorithm-definition.ts, read by the compiler. */
function literalsOf(alias: 'Algorithm' | 'RateAlgorithm'): string[] {
  const program = ts.createProgram([DEFINITION_FILE], { strict: true, noEmit: true });
  const checker = program.getTypeChecker();
  const file = program.getSourceFile(DEFINITION_FILE)!;
  const node = file.statements.find(
    (s): s is ts.TypeAliasDeclaration => ts.isTypeAliasDeclaration(s) && s.name.text === alias,
  )!;
  const type = checker.getTypeAtLocation(node.name);
  const members = type.isUnion() ? type.types : [type];
  return members
    .filter((t): t is ts.StringLiteralType => t.isStringLiteral())
    .map((t) => t.value)
    .sort();
}

/** Each problem of `check` over every algorithm, as one line naming the algorithm. */
function problems<N extends string>(names: readonly N[], check: (name: N) => string[]): string[] {
  return names.flatMap((name) => check(name).map((problem) => `${name}: ${problem}`));
}

describe('the algorithm registry', () => {
  const publicNames = literalsOf('Algorithm');
  const registered = Object.keys(ALGORITHM_DEFINITIONS);

  it('has a definition for every name of the public Algorithm type, and no other', () => {
    expect(publicNames.length).toBeGreaterThan(0);
    expect(
      problems(publicNames, (name) =>
        registered.includes(name)
          ? []
          : ['no entry in ALGORITHM_DEFINITIONS (lib/core/algorithms/algorithm.registry.ts)'],
      ),
    ).toEqual([]);
    expect(
      problems(registered, (name) =>
        publicNames.includes(name)
          ? []
          : ['registered but not a member of the Algorithm type (algorithm-definition.ts)'],
      ),
    ).toEqual([]);
  });

  it('lists the rate algorithms of the RateAlgorithm type as ALGORITHMS, and every one as POLICY_ALGORITHMS', () => {
    expect([...RATE_ALGORITHM_NAMES].sort()).toEqual(literalsOf('RateAlgorithm'));
    expect(ALGORITHMS).toEqual(RATE_ALGORITHM_NAMES);
    expect(POLICY_ALGORITHMS).toEqual(ALGORITHM_NAMES);
  });

  it('names each definition after its own entry', () => {
    expect(
      problems(registered, (name) => {
        const { name: declared } = ALGORITHM_DEFINITIONS[name as Algorithm];
        return declared === name ? [] : [`its definition is named '${declared}'`];
      }),
    ).toEqual([]);
  });

  it('has a Lua folder per algorithm with consume.lua, refund.lua and model.lua (and extend.lua for leases)', () => {
    expect(
      problems(publicNames, (name) => {
        const kind = ALGORITHM_DEFINITIONS[name as Algorithm]?.kind;
        const needed = [
          'consume.lua',
          'refund.lua',
          'model.lua',
          ...(kind === 'lease' ? ['extend.lua'] : []),
        ];
        return needed
          .filter((file) => !existsSync(join(LUA, name, file)))
          .map((file) => `missing lua/${name}/${file}`);
      }),
    ).toEqual([]);
  });

  it('has no Lua folder that is neither an algorithm nor a shared one', () => {
    const folders = readdirSync(LUA, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    expect(
      folders
        .filter((folder) => !NOT_ALGORITHMS.has(folder) && !registered.includes(folder))
        .map((folder) => `lua/${folder}/ has no entry in ALGORITHM_DEFINITIONS`),
    ).toEqual([]);
  });

  it('has a memory model per algorithm', () => {
    expect(
      problems(publicNames, (name) => {
        const model = (MEMORY_MODELS as Partial<Record<string, unknown>>)[name] as
          Record<string, unknown> | undefined;
        if (model === undefined) {
          return ['no memory model in MEMORY_MODELS (lib/stores/memory/memory-models.ts)'];
        }
        return ['owns', 'evaluate', 'refund', 'charge']
          .filter((method) => typeof model[method] !== 'function')
          .map((method) => `its memory model has no ${method}()`);
      }),
    ).toEqual([]);
  });

  it("assembles each algorithm's scripts and its entry in the shared models table", () => {
    const library = scriptLibrary();
    expect(
      problems(ALGORITHM_NAMES, (name) => {
        const ids = ALGORITHM_DEFINITIONS[name].keepsSpendIds;
        return [
          ...(['consume', 'refund'] as const)
            .filter((op) => !library.source.includes(`'${library.functionName(`${name}/${op}`)}'`))
            .map((op) => `no registered function for ${name}/${op}`),
          ...(library.source.includes(
            `models['${name}'] = { evaluate = evaluate, commit = commit, reset = resetIn, ids = ${String(ids)} }`,
          )
            ? []
            : [`no models['${name}'] entry (with ids = ${String(ids)}) in the assembled library`]),
        ];
      }),
    ).toEqual([]);
  });

  it('accepts burst exactly for the algorithms whose definition uses it', () => {
    expect(
      problems(ALGORITHM_NAMES, (algorithm) => {
        const { usesBurst } = ALGORITHM_DEFINITIONS[algorithm];
        let accepted: boolean;
        try {
          resolvePolicy({ name: 'p', algorithm, limit: 5, window: '1s', burst: 8 });
          accepted = true;
        } catch {
          accepted = false;
        }
        return accepted === usesBurst
          ? []
          : [`burst ${accepted ? 'accepted' : 'refused'} but usesBurst is ${String(usesBurst)}`];
      }),
    ).toEqual([]);
  });

  it('keeps state at least one window after a spend', () => {
    expect(
      problems(ALGORITHM_NAMES, (algorithm) => {
        const rule = { limit: 4, windowMs: 1000, burst: 4 };
        const lifetime = ALGORITHM_DEFINITIONS[algorithm].lifetimeMs(rule);
        return lifetime >= rule.windowMs
          ? []
          : [`lifetimeMs ${lifetime} is shorter than the window`];
      }),
    ).toEqual([]);
  });
});
