/**
 * The npm package as users get it: `npm pack` (prepack builds a clean dist/), its file list,
 * publint and @arethetypeswrong/cli on the tarball, then fresh Nest 11 (CommonJS) and Nest 12
 * (ES modules) apps that install the tarball from disk and everything else from the registry
 * (npm's cache first), compile against its types and limit real HTTP requests.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { redisUrl, uniquePrefix } from '../../support/redis';
import {
  CONSUMER_POLICIES,
  CONSUMERS,
  npmEnv,
  run,
  type RunningConsumer,
  startConsumer,
  writeConsumerApp,
} from './consumer-app';

const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
const TSC = path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const BIN = (name: string) => path.join(REPO_ROOT, 'node_modules', '.bin', name);
/** npm install, tsc on a whole Nest app, npm pack: slow on a busy 2-core machine. */
const SLOW_MS = 240_000;

jest.setTimeout(SLOW_MS);

interface PackResult {
  filename: string;
  files: Array<{ path: string; mode: number }>;
}

let workDir: string;
let tarball: string;
let packed: PackResult;

beforeAll(async () => {
  workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'redlimit-packaging-'));
  const { stdout } = await run(
    'npm',
    ['pack', '--json', '--pack-destination', workDir, '--no-fund', '--no-audit'],
    { cwd: REPO_ROOT, env: npmEnv(), timeoutMs: SLOW_MS },
  );
  packed = (JSON.parse(stdout) as PackResult[])[0]!;
  tarball = path.join(workDir, packed.filename);
});

afterAll(() => fs.rmSync(workDir, { recursive: true, force: true }));

describe('the packed tarball', () => {
  it('holds the build, the Lua scripts, the README and package.json — no tests, sample, bench or sources', () => {
    const paths = packed.files.map((f) => f.path);
    const outside = paths.filter(
      (p) => !/^(dist\/.+\.(js|d\.ts)|lua\/.+\.lua|README\.md|package\.json|LICENSE)$/.test(p),
    );
    expect(outside).toEqual([]);
    expect(
      paths.filter(
        (p) => /^(test|sample|bench|lib)\/|\.spec\.|\.ts$/.test(p) && !p.endsWith('.d.ts'),
      ),
    ).toEqual([]);
    for (const file of [
      'dist/index.js',
      'dist/index.d.ts',
      'dist/nest/index.js',
      'dist/nest/index.d.ts',
      'dist/cli/main.js',
      'lua/reset/reset.lua',
    ]) {
      expect(paths).toContain(file);
    }
  });

  it('the bin starts with a shebang', () => {
    const main = fs.readFileSync(path.join(REPO_ROOT, 'dist', 'cli', 'main.js'), 'utf8');
    expect(main.startsWith('#!/usr/bin/env node\n')).toBe(true);
  });

  it('publint finds nothing to report, suggestions included', async () => {
    const { stdout, stderr } = await run(
      BIN('publint'),
      ['run', tarball, '--level', 'suggestion'],
      {
        cwd: workDir,
        timeoutMs: 60_000,
      },
    );
    expect(`${stdout}${stderr}`).toMatch(/All good!/);
  });

  it('@arethetypeswrong/cli finds no problem (node10, node16 from CJS and ESM, bundler)', async () => {
    const { stdout } = await run(BIN('attw'), [tarball, '--format', 'json'], {
      cwd: workDir,
      timeoutMs: 60_000,
      allowFailure: true,
    });
    const report = JSON.parse(stdout) as { problems: unknown; analysis: { entrypoints: object } };
    expect(report.problems).toEqual(Array.isArray(report.problems) ? [] : {});
    expect(Object.keys(report.analysis.entrypoints)).toEqual(
      expect.arrayContaining(['.', './nest']),
    );
  });
});

describe.each(CONSUMERS.map((flavor) => [flavor.name, flavor] as const))(
  'a fresh app: %s',
  (_name, flavor) => {
    let dir: string;
    let app: RunningConsumer | undefined;
    let env: NodeJS.ProcessEnv;

    beforeAll(async () => {
      dir = path.join(workDir, `nest${flavor.nest}`);
      fs.mkdirSync(dir);
      writeConsumerApp(dir, flavor, tarball);
      await run(
        'npm',
        ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'],
        { cwd: dir, env: npmEnv(), timeoutMs: SLOW_MS },
      );
      await run(process.execPath, [TSC, '-p', '.'], { cwd: dir, timeoutMs: SLOW_MS });
      env = {
        PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`,
        REDIS_URL: redisUrl(),
        REDLIMIT_PREFIX: uniquePrefix(`packaging-nest${flavor.nest}`),
        REDLIMIT_POLICIES: CONSUMER_POLICIES,
      };
      app = await startConsumer(dir, env, 60_000);
    });

    afterAll(async () => {
      await app?.stop();
    });

    const request = (route: string, body?: object) =>
      fetch(`${app!.url}${route}`, {
        ...(body && {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
      });
    const statuses = async (route: string, times: number, body?: object) => {
      const codes: number[] = [];
      for (let i = 0; i < times; i++) codes.push((await request(route, body)).status);
      return codes;
    };

    it(`installs redlimit and Nest ${flavor.nest} (${flavor.type}) as it would for a user`, () => {
      const installed = (name: string) =>
        JSON.parse(
          fs.readFileSync(path.join(dir, 'node_modules', name, 'package.json'), 'utf8'),
        ) as {
          version: string;
          type?: string;
        };
      expect(installed('@nestjs/core').version).toMatch(new RegExp(`^${flavor.nest}\\.`));
      expect(installed('redlimit').version).toBe(
        (
          JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
            version: string;
          }
        ).version,
      );
      const mainJs = fs.readFileSync(path.join(dir, 'dist', 'main.js'), 'utf8');
      // The app was compiled to the module system it claims.
      expect(/^import |\nimport /.test(mainJs)).toBe(flavor.type === 'module');
    });

    it('@Throttle: limit 2 → the third request is refused with 429 and Retry-After', async () => {
      expect(await statuses('/links', 2)).toEqual([200, 200]);
      const refused = await request('/links');
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(refused.headers.get('ratelimit')).toMatch(/^"links";r=0;t=\d+$/);
    });

    it('@Attempt: right passwords are refunded; two wrong ones, then the third sign-in is refused', async () => {
      const alice = { email: 'alice@example.com' };
      expect(await statuses('/sign-in', 3, { ...alice, password: 'right' })).toEqual([
        200, 200, 200,
      ]);
      expect(await statuses('/sign-in', 2, { ...alice, password: 'wrong' })).toEqual([401, 401]);
      expect(await statuses('/sign-in', 1, { ...alice, password: 'right' })).toEqual([429]);
    });

    it('the core entry point (`redlimit`) imports too', async () => {
      expect(await (await request('/core')).json()).toEqual({ windowMs: 900_000 });
    });

    it(`RedlimitHealthIndicator reports up through @nestjs/terminus ${flavor.nest}`, async () => {
      const response = await request('/health');
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({
        status: 'ok',
        info: { redlimit: { status: 'up', store: 'redis' } },
      });
    });

    it('the `redlimit` bin is installed and reads the app environment', async () => {
      const { stdout } = await run(
        path.join(dir, 'node_modules', '.bin', 'redlimit'),
        ['peek', 'links', '--route', 'AppController.links /links', '--ip', '127.0.0.1', '--json'],
        { cwd: dir, env, timeoutMs: 30_000 },
      );
      expect(JSON.parse(stdout)).toMatchObject({
        allowed: false,
        keys: [{ key: 'AppController.links /links|ip:127.0.0.1', remaining: 0, limit: 2 }],
      });
    });

    it('every export is importable by name from ES modules (cjs-module-lexer finds them all)', async () => {
      const { stdout } = await run(process.execPath, ['check-exports.mjs'], {
        cwd: dir,
        timeoutMs: 30_000,
      });
      const report = JSON.parse(stdout) as Record<string, { names: number; missing: string[] }>;
      expect(report['redlimit']!.missing).toEqual([]);
      expect(report['redlimit/nest']!.missing).toEqual([]);
      expect(report['redlimit/nest']!.names).toBeGreaterThan(report['redlimit']!.names);
    });

    it('types resolve under moduleResolution bundler too', async () => {
      await run(
        process.execPath,
        [
          TSC,
          '-p',
          '.',
          '--noEmit',
          '--module',
          'preserve',
          '--moduleResolution',
          'bundler',
          '--skipLibCheck',
        ],
        { cwd: dir, timeoutMs: SLOW_MS },
      );
    });

    it('logged no error or warning while serving', () => {
      expect(app!.stderr()).toBe('');
    });
  },
);
