/**
 * Fixture: a fresh Nest app that installs redlimit from the packed tarball, in a temp dir — as a
 * Nest 11 CommonJS app or a Nest 12 ES module app, from one TypeScript source.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

/** The two apps: Nest major, module system, TypeScript `module` setting. */
export interface ConsumerFlavor {
  readonly name: string;
  readonly nest: 11 | 12;
  readonly type: 'commonjs' | 'module';
  readonly tsModule: 'node16' | 'nodenext';
}

export const CONSUMERS: readonly ConsumerFlavor[] = [
  {
    name: 'Nest 11, CommonJS, moduleResolution node16',
    nest: 11,
    type: 'commonjs',
    tsModule: 'node16',
  },
  {
    name: 'Nest 12, ES modules, moduleResolution nodenext',
    nest: 12,
    type: 'module',
    tsModule: 'nodenext',
  },
];

/** The policies of the app, through REDLIMIT_POLICIES: limit 2 everywhere. */
export const CONSUMER_POLICIES = 'login=sliding-window:2/15m,links=sliding-window:2/1h';

/** The app: a @Throttle route, an @Attempt sign-in, a Terminus health check, a core import. */
const MAIN_TS = `import 'reflect-metadata';
import { Body, Controller, Get, HttpCode, Module, Post, UnauthorizedException, UseGuards } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { parseDuration } from 'redlimit';
import {
  Attempt,
  RedlimitGuard,
  RedlimitHealthIndicator,
  RedlimitModule,
  Throttle,
  redlimitOptionsFromEnv,
} from 'redlimit/nest';

@Controller()
class AppController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly redlimit: RedlimitHealthIndicator,
  ) {}

  @Get('links')
  @UseGuards(RedlimitGuard)
  @Throttle('links')
  links(): { ok: boolean } {
    return { ok: true };
  }

  @Post('sign-in')
  @HttpCode(200)
  signIn(
    @Body() body: { password?: string },
    @Attempt(['ip', 'email'], { policy: 'login' }) attempt: Attempt,
  ): { ok: boolean } {
    if (body.password !== 'right') throw new UnauthorizedException();
    attempt.refund();
    return { ok: true };
  }

  @Get('health')
  @HealthCheck()
  check() {
    return this.health.check([() => this.redlimit.isHealthy('redlimit')]);
  }

  @Get('core')
  core(): { windowMs: number } {
    return { windowMs: parseDuration('15m', 'window') };
  }
}

@Module({
  imports: [RedlimitModule.forRoot(redlimitOptionsFromEnv(process.env)), TerminusModule],
  controllers: [AppController],
  providers: [RedlimitHealthIndicator],
})
class AppModule {}

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create(AppModule, { logger: ['error', 'warn'] });
  app.enableShutdownHooks();
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  console.log(JSON.stringify({ port }));
}

bootstrap().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
`;

/**
 * Every named export of both entry points, through \`import\` and through \`require\`: a name that
 * CommonJS has and the ES module namespace lacks was not detected by cjs-module-lexer.
 */
const CHECK_EXPORTS_MJS = `import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const report = {};
for (const entry of ['redlimit', 'redlimit/nest']) {
  const esm = await import(entry);
  const cjs = require(entry);
  report[entry] = {
    names: Object.keys(cjs).length,
    missing: Object.keys(cjs).filter((name) => !(name in esm)),
  };
}
console.log(JSON.stringify(report));
`;

/** Writes package.json, tsconfig.json, src/main.ts and check-exports.mjs of a consumer app. */
export function writeConsumerApp(dir: string, flavor: ConsumerFlavor, tarball: string): void {
  const nest = `^${flavor.nest}.0.0`;
  const manifest = {
    name: `redlimit-consumer-nest${flavor.nest}`,
    private: true,
    type: flavor.type,
    dependencies: {
      '@nestjs/common': nest,
      '@nestjs/core': nest,
      '@nestjs/platform-express': nest,
      '@nestjs/terminus': `^${flavor.nest}.0.0`,
      ioredis: '^5.4.0',
      redlimit: `file:${tarball}`,
      'reflect-metadata': '^0.2.0',
      rxjs: '^7.8.0',
    },
    devDependencies: { '@types/node': '^20.0.0' },
  };
  const tsconfig = {
    compilerOptions: {
      target: 'ES2022',
      module: flavor.tsModule,
      moduleResolution: flavor.tsModule,
      strict: true,
      esModuleInterop: true,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      skipLibCheck: false,
      types: ['node'],
      rootDir: 'src',
      outDir: 'dist',
    },
    include: ['src'],
  };
  fs.mkdirSync(path.join(dir, 'src'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));
  fs.writeFileSync(path.join(dir, 'src', 'main.ts'), MAIN_TS);
  fs.writeFileSync(path.join(dir, 'check-exports.mjs'), CHECK_EXPORTS_MJS);
}

/** npm settings a user's environment may carry, kept for the npm runs of these tests. */
const USER_NPM_SETTING =
  /^npm_config_(cache|registry|userconfig|globalconfig|cafile|ca|strict_ssl|proxy|https?_proxy|noproxy)$/i;

/**
 * `process.env` without what `npm test` adds for its own script (`npm_config_local_prefix`,
 * `npm_package_*`, `INIT_CWD`, …): a nested `npm install` must work on its own directory.
 */
export function npmEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => !/^(npm_|init_cwd$)/i.test(name) || USER_NPM_SETTING.test(name),
    ),
  );
}

export interface Finished {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to its end (killed after `timeoutMs`); rejects on a non-zero exit unless `allowFailure`. */
export function run(
  command: string,
  args: readonly string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs: number; allowFailure?: boolean },
): Promise<Finished> {
  const child = spawn(command, [...args], {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const finished = { code, stdout, stderr };
      if (code === 0 || options.allowFailure) resolve(finished);
      else {
        const how = signal
          ? `killed by ${signal} (timeout ${options.timeoutMs} ms?)`
          : `exit ${code}`;
        reject(new Error(`${command} ${args.join(' ')}: ${how}\n${stderr}\n${stdout}`.trim()));
      }
    });
  });
}

/** A consumer app running as its own process. */
export interface RunningConsumer {
  readonly url: string;
  /** What the app wrote to stderr so far. */
  stderr(): string;
  stop(): Promise<void>;
}

/** Starts `node dist/main.js` in the app dir; resolves once it prints the port it listens on. */
export function startConsumer(
  dir: string,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<RunningConsumer> {
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: dir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return new Promise((resolve, reject) => {
    const fail = (why: string) => {
      child.kill('SIGKILL');
      reject(
        new Error(`the consumer app ${why}\n--- stderr ---\n${stderr}\n--- stdout ---\n${stdout}`),
      );
    };
    const timer = setTimeout(() => fail(`did not start within ${timeoutMs} ms`), timeoutMs);
    const early = (code: number | null): void => {
      clearTimeout(timer);
      fail(`exited with ${code} before listening`);
    };
    child.once('close', early);
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      const match = /\{"port":(\d+)\}/.exec(stdout);
      if (!match) return;
      clearTimeout(timer);
      child.off('close', early);
      resolve({
        url: `http://127.0.0.1:${match[1]}`,
        stderr: () => stderr,
        stop: async () => {
          child.kill('SIGTERM');
          await exited;
        },
      });
    });
  });
}
