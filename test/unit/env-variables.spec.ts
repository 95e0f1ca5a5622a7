import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HELP } from '../../lib/cli/redlimit.cli';
import { ENV_VARIABLE_NAMES, ENV_VARIABLES } from '../../lib/config/env-variables.table';
import { redlimitOptionsFromEnv } from '../../lib/config/options-from-env.util';
import { RedlimitConfigError } from '../../lib/config/redlimit-config.error';

const root = join(__dirname, '..', '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

/** The first column of a table as the docs write it: "`A`", or "`A`, else `B`". */
const variableCell = (row: (typeof ENV_VARIABLES)[number]) =>
  row.fallback === undefined ? `\`${row.name}\`` : `\`${row.name}\`, else \`${row.fallback}\``;

/** Every variable name written in `text`. */
const namesIn = (text: string) =>
  [...text.matchAll(/\b(?:REDLIMIT_[A-Z0-9_]+|REDIS_URL)\b/g)].map((m) => m[0]);

/** The rows of the first Markdown table after `heading` in `text`: their cells. */
function markdownTable(text: string, heading: string): string[][] {
  const lines = text.slice(text.indexOf(`\n${heading}\n`)).split('\n');
  const start = lines.findIndex((line) => line.startsWith('|'));
  const table = lines.slice(
    start,
    lines.findIndex((line, i) => i > start && !line.startsWith('|')),
  );
  return table.slice(2).map((line) =>
    line
      .slice(1, -1)
      .split(' | ')
      .map((cell) => cell.trim()),
  );
}

describe('the environment table', () => {
  it('names each variable once', () => {
    expect(new Set(ENV_VARIABLE_NAMES).size).toBe(ENV_VARIABLE_NAMES.length);
    for (const row of ENV_VARIABLES) expect(row.meaning.trim()).not.toBe('');
  });

  it('is the JSDoc table of redlimitOptionsFromEnv (the public doc in the .d.ts), row by row', () => {
    const source = read('lib/config/options-from-env.util.ts');
    const jsdoc = source.slice(0, source.indexOf('export function redlimitOptionsFromEnv('));
    const rows = jsdoc
      .slice(jsdoc.lastIndexOf('/**'))
      .split('\n')
      .map((line) => /^ \* \| (.+) \| (.+) \|$/.exec(line))
      .filter((match) => match !== null)
      .map(([, variable, meaning]) => [variable, meaning])
      .filter(([variable]) => variable !== 'variable' && variable !== '---');
    expect(rows).toEqual(ENV_VARIABLES.map((row) => [variableCell(row), row.meaning]));
  });

  it('is what docs/nest.md lists under "Configuration from the environment"', () => {
    const rows = markdownTable(read('docs/nest.md'), '## Configuration from the environment');
    const listed = rows.flatMap(([variable = '']) => namesIn(variable));
    expect([...listed].sort()).toEqual([...ENV_VARIABLE_NAMES].sort());
    expect(new Set(listed).size).toBe(listed.length);
  });

  it('holds every variable the CLI names, in its help and in docs/cli.md, and they agree', () => {
    const help = namesIn(HELP.slice(HELP.indexOf('\nEnvironment:')));
    const rows = markdownTable(read('docs/cli.md'), '## Configuration');
    const documented = rows.flatMap(([variable = '']) => namesIn(variable));
    const inCode = namesIn(
      readdirSync(join(root, 'lib/cli'))
        .map((file) => read(`lib/cli/${file}`))
        .join('\n'),
    );
    for (const name of [...help, ...documented, ...inCode]) {
      expect(ENV_VARIABLE_NAMES).toContain(name);
    }
    expect([...help].sort()).toEqual([...documented].sort());
  });

  it('applies the rows in order: of two bad client-IP variables, the one above is named', () => {
    const named = (env: Record<string, string>) => {
      try {
        redlimitOptionsFromEnv(env);
      } catch (error) {
        return (error as RedlimitConfigError).variable;
      }
      return 'none';
    };
    // Each is wrong on its own (hops without proxies, subnet 0); the table checks the subnet first.
    expect(named({ REDLIMIT_TRUSTED_HOPS: '2' })).toBe('REDLIMIT_TRUSTED_HOPS');
    expect(named({ REDLIMIT_TRUSTED_HOPS: '2', REDLIMIT_IPV6_SUBNET: '0' })).toBe(
      'REDLIMIT_IPV6_SUBNET',
    );
    expect(named({ REDLIMIT_SHADOW: 'yes', REDLIMIT_REDIS_URL: 'http://x' })).toBe(
      'REDLIMIT_REDIS_URL',
    );
  });
});
