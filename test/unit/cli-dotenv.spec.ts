import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readDotenv, withDotenv } from '../../lib/cli/cli-dotenv.util';

describe('--dotenv files', () => {
  const dir = mkdtempSync(join(tmpdir(), 'redlimit-dotenv-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  it('reads NAME=value lines, comments, export, quotes', () => {
    const path = file(
      'ok.env',
      [
        '# a comment',
        '',
        'REDLIMIT_PREFIX=sample:',
        'export REDLIMIT_POLICIES = login=fixed-window:5/15m  # trailing comment',
        "REDLIMIT_KEY_SECRET='a # secret, quoted'",
        'MULTI="one\\ntwo"',
      ].join('\n'),
    );
    expect(readDotenv(path)).toEqual({
      REDLIMIT_PREFIX: 'sample:',
      REDLIMIT_POLICIES: 'login=fixed-window:5/15m',
      REDLIMIT_KEY_SECRET: 'a # secret, quoted',
      MULTI: 'one\ntwo',
    });
  });

  it('names the file and the line that is not NAME=value', () => {
    const path = file('bad.env', 'A=1\nnot a variable\n');
    expect(() => readDotenv(path)).toThrow(/--dotenv .*bad\.env: line 2 is not NAME=value/);
    expect(() => readDotenv(join(dir, 'missing.env'))).toThrow(/cannot read it \(ENOENT\)/);
  });

  it('variables set in the environment win; empty counts as unset', () => {
    const env = withDotenv(
      { REDLIMIT_PREFIX: 'mine:', REDLIMIT_POLICIES: '' },
      {
        REDLIMIT_PREFIX: 'sample:',
        REDLIMIT_POLICIES: 'a=fixed-window:1/1m',
      },
    ) as { get(name: string): unknown };
    expect(env.get('REDLIMIT_PREFIX')).toBe('mine:');
    expect(env.get('REDLIMIT_POLICIES')).toBe('a=fixed-window:1/1m');
    expect(env.get('REDIS_URL')).toBeUndefined();
  });
});
