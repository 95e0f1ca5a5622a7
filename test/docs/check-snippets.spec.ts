// The docs snippet checker (scripts/check-snippets.ts) on a fixture: it must report the broken
// block, at its markdown line, and nothing else. No Redis and no dist/ needed: the fixture's blocks
// import only node builtins.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { checkSnippets, extractSnippets } from '../../scripts/check-snippets';

const ROOT = path.resolve(__dirname, '../..');
// Inside the repo (gitignored), so that @types/node and node_modules resolve as for .snippets/.
const DIR = path.join(ROOT, '.snippets-test', `spec-${process.pid}`);

const FIXTURE = [
  '# Fixture', // 1
  '', // 2
  '```ts', // 3
  "import { setTimeout as sleep } from 'node:timers/promises';", // 4
  'const unused = 1;', // 5: unused names are not errors
  'await sleep(1);', // 6: top-level await is allowed
  '```', // 7
  '', // 8
  '```bash', // 9
  'npm run build', // 10
  '```', // 11
  '', // 12
  '```typescript', // 13
  "import { readFileSync } from 'node:fs';", // 14
  "const n: number = readFileSync('x', 'utf8');", // 15: the one error
  '```', // 16
  '', // 17
  '<!-- snippet: partial -->', // 18
  '', // 19
  '```ts', // 20
  'const broken: number = "not checked";', // 21
  '```', // 22
  '', // 23
  '````md', // 24
  '```ts', // 25: inside a markdown example, not a block of its own
  'const alsoBroken: number = "no";', // 26
  '```', // 27
  '````', // 28
  '',
].join('\n');

describe('docs:snippets checker', () => {
  beforeAll(() => {
    fs.mkdirSync(DIR, { recursive: true });
    fs.writeFileSync(path.join(DIR, 'guide.md'), FIXTURE);
  });
  afterAll(() => {
    fs.rmSync(DIR, { recursive: true, force: true });
    try {
      fs.rmdirSync(path.dirname(DIR)); // only when no other run uses it
    } catch {
      // not empty
    }
  });

  it('extracts the ts/typescript blocks with their first code line and the partial mark', () => {
    const snippets = extractSnippets(FIXTURE, 'guide.md');
    expect(snippets.map((s) => [s.line, s.partial])).toEqual([
      [4, false],
      [14, false],
      [21, true],
    ]);
  });

  it('reports exactly the broken block, on its markdown line', () => {
    const result = checkSnippets(DIR, ['guide.md'], path.join(DIR, 'out'));
    expect(result.snippets).toHaveLength(3);
    expect(result.diagnostics).toEqual([
      {
        file: 'guide.md',
        line: 15,
        column: 7,
        code: 'TS2322',
        message: "Type 'string' is not assignable to type 'number'.",
      },
    ]);
  });
});
