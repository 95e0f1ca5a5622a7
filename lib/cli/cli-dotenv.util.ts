import { readFileSync } from 'node:fs';
import type { EnvSource } from '../config/options-from-env.util';
import { usageError } from './cli.error';

/**
 * Reads a dotenv-style file for `--dotenv`: `NAME=value` lines, `#` comments, blank lines, an
 * optional `export ` prefix, values optionally in single or double quotes (`\n` in double quotes
 * is a newline).
 *
 * @throws CliError (exit code 2) naming the file, and the line that is not `NAME=value`
 * @example
 * readDotenv('sample/redlimit.env'); // { REDLIMIT_PREFIX: 'sample:', REDLIMIT_POLICIES: '…' }
 */
export function readDotenv(path: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw usageError(
      `--dotenv ${path}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    );
  }
  const variables: Record<string, string> = {};
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!match) {
      throw usageError(`--dotenv ${path}: line ${index + 1} is not NAME=value`);
    }
    variables[match[1]!] = unquote(match[2]!);
  });
  return variables;
}

/**
 * The environment with a file's variables underneath: a variable already set wins (as with
 * `@nestjs/config` and dotenv), so one shell can point the file at another Redis or prefix.
 *
 * @example
 * withDotenv(process.env, readDotenv('sample/redlimit.env'));
 */
export function withDotenv(env: EnvSource, file: Readonly<Record<string, string>>): EnvSource {
  const get =
    typeof (env as { get?: unknown }).get === 'function'
      ? (name: string) => (env as { get(name: string): unknown }).get(name)
      : (name: string) => (env as Readonly<Record<string, unknown>>)[name];
  return {
    get: (name: string) => {
      const value = get(name);
      return value === undefined || value === null || value === '' ? file[name] : value;
    },
  };
}

function unquote(value: string): string {
  const quote = value[0];
  if ((quote === '"' || quote === "'") && value.length >= 2 && value.endsWith(quote)) {
    const inner = value.slice(1, -1);
    return quote === '"' ? inner.replace(/\\n/g, '\n') : inner;
  }
  return value.replace(/\s+#.*$/, '');
}
