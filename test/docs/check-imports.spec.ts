// The import checker (scripts/check-imports.ts) on fixture trees: it must report a cycle however
// its files import each other (types, re-exports, require, import()), and a framework-free file
// that loads NestJS through other files, with the chain; imports of types only load nothing.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { checkImports, importSpecifiers } from '../../scripts/check-imports';

/** Writes `files` (path → source) under a fresh temporary root and returns the root. */
function tree(files: Record<string, string>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'redlimit-imports-'));
  for (const [file, source] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), source);
  }
  return root;
}

describe('import checker', () => {
  it('accepts a layered tree', () => {
    const root = tree({
      'lib/core/policy.ts':
        "import { createHash } from 'node:crypto';\nexport const a = createHash;\n",
      'lib/core/index.ts': "export * from './policy';\n",
      'lib/stores/memory.store.ts': "import { a } from '../core';\nexport const b = a;\n",
      'lib/nest/guard.ts':
        "import { Injectable } from '@nestjs/common';\nimport { b } from '../stores/memory.store';\nexport const c = [Injectable, b];\n",
      // A type from lib/nest that imports Nest for types only: erased, so the CLI loads no Nest.
      'lib/nest/options.interface.ts':
        "import type { ExecutionContext } from '@nestjs/common';\nexport interface O { c?: ExecutionContext }\n",
      'lib/cli/main.ts':
        "import type { O } from '../nest/options.interface';\nexport const o: O = {};\n",
    });
    expect(checkImports(root)).toEqual([]);
  });

  it('reports a cycle through type imports and re-exports, as a path back to its start', () => {
    const root = tree({
      'lib/stores/clients/client-port.ts':
        "import { IoredisPort } from './ioredis.port';\nexport interface ClientPort { x: number }\nexport const p = IoredisPort;\n",
      'lib/stores/clients/ioredis.port.ts':
        "export type { ClientPort } from './helpers';\nexport class IoredisPort {}\n",
      'lib/stores/clients/helpers.ts':
        "import type { ClientPort } from './client-port';\nexport type { ClientPort };\n",
    });
    expect(checkImports(root)).toEqual([
      'import cycle: lib/stores/clients/client-port.ts -> lib/stores/clients/ioredis.port.ts -> ' +
        'lib/stores/clients/helpers.ts -> lib/stores/clients/client-port.ts',
    ]);
  });

  it('reports cycles made with require() and import()', () => {
    const root = tree({
      'lib/core/a.ts': "export const a = () => require('./b');\n",
      'lib/core/b.ts': "export const b = () => import('./a');\n",
    });
    expect(checkImports(root)).toEqual([
      'import cycle: lib/core/a.ts -> lib/core/b.ts -> lib/core/a.ts',
    ]);
  });

  it('reports a framework-free file that loads NestJS through lib/nest, with the chain', () => {
    const root = tree({
      'lib/nest/options-from-env.util.ts':
        "import { Logger } from '@nestjs/common';\nexport const env = Logger;\n",
      'lib/cli/config.util.ts':
        "import { env } from '../nest/options-from-env.util';\nexport const c = env;\n",
      'lib/cli/main.ts': "import { c } from './config.util';\nexport const m = c;\n",
      'lib/client/fetch.ts': "export const f = () => require('@nestjs/core');\n",
    });
    expect(checkImports(root)).toEqual([
      'framework-free file loads NestJS: lib/cli/config.util.ts -> lib/nest/options-from-env.util.ts -> @nestjs/common',
      'framework-free file loads NestJS: lib/cli/main.ts -> lib/cli/config.util.ts -> lib/nest/options-from-env.util.ts -> @nestjs/common',
      'framework-free file loads NestJS: lib/client/fetch.ts -> @nestjs/core',
    ]);
  });

  it('tells type-only imports from the others', () => {
    const source = [
      "import type { A } from './a';",
      "import { type B, type C } from './b';",
      "import { type D, e } from './d';",
      "import f from './f';",
      "import './g';",
      "export type { H } from './h';",
      "export { i } from './i';",
      "export * from './j';",
      "type K = import('./k').K;",
    ].join('\n');
    expect(importSpecifiers(source, 'x.ts')).toEqual([
      { specifier: './a', typeOnly: true },
      { specifier: './b', typeOnly: true },
      { specifier: './d', typeOnly: false },
      { specifier: './f', typeOnly: false },
      { specifier: './g', typeOnly: false },
      { specifier: './h', typeOnly: true },
      { specifier: './i', typeOnly: false },
      { specifier: './j', typeOnly: false },
      { specifier: './k', typeOnly: true },
    ]);
  });

  it('finds nothing wrong in lib/', () => {
    expect(checkImports(path.resolve(__dirname, '../..'))).toEqual([]);
  });
});
