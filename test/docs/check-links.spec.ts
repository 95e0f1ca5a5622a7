// The docs link checker (scripts/check-links.ts) on a fixture: it must report the missing file and
// the missing anchor, at their lines, and accept the good links, the ones in code and the URLs.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { anchorsOf, checkLinks, docFiles, slug } from '../../scripts/check-links';

describe('docs link checker', () => {
  let root: string;

  beforeAll(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'redlimit-links-'));
    fs.mkdirSync(path.join(root, 'docs', 'api'), { recursive: true });
    fs.writeFileSync(
      path.join(root, 'docs', 'guide.md'),
      [
        '# Guide', // 1
        '', // 2
        '## `@Throttle`, `RedlimitGuard`', // 3
        '', // 4
        '## Options', // 5
        '', // 6
        '## Options', // 7: a repeat is #options-1
        '', // 8
        '[up](../README.md) [self](#options-1) [there](#throttle-redlimitguard)', // 9
        '[web](https://example.com/x.md#nowhere) `[code](missing.md)`', // 10
        '```md', // 11
        '[in a block](missing.md)', // 12
        '```', // 13
        '[gone](#no-such-heading)', // 14: broken anchor
      ].join('\n'),
    );
    fs.writeFileSync(path.join(root, 'docs', 'api', 'x.md'), '[ignored](nowhere.md)\n');
    fs.writeFileSync(
      path.join(root, 'README.md'),
      ['# Readme', '', '[guide](docs/guide.md#options)', '[lost](docs/lost.md)'].join('\n'),
    );
  });

  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('slugs headings as GitHub does', () => {
    expect(slug('`@Throttle`, `RedlimitGuard`, `@SkipThrottle`')).toBe(
      'throttle-redlimitguard-skipthrottle',
    );
    expect(slug('Step 1: `RedlimitThrottlerStorage`')).toBe('step-1-redlimitthrottlerstorage');
    expect([...anchorsOf('# A\n## A\n```\n# not a heading\n```\n')]).toEqual(['a', 'a-1']);
  });

  it('reports exactly the missing file and the missing anchor, not docs/api', () => {
    const files = docFiles(root);
    expect(files.sort()).toEqual(['README.md', path.join('docs', 'guide.md')].sort());
    expect(checkLinks(root, files)).toEqual([
      { file: 'README.md', line: 4, target: 'docs/lost.md', reason: 'no such file' },
      {
        file: path.join('docs', 'guide.md'),
        line: 14,
        target: '#no-such-heading',
        reason: `no heading #no-such-heading in ${path.join('docs', 'guide.md')}`,
      },
    ]);
  });
});
