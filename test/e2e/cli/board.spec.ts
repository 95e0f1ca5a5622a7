/**
 * `redlimit board`: the ops board served by the CLI against a single Redis and a Redis Cluster
 * (where the Cluster suites run), with what an app's board recorder wrote: the login link signs a
 * browser in, the pages show the app's lockout, an unlock resets it and is audited as the CLI's.
 */
import { Cluster, type Redis } from 'ioredis';
import { BoardRecorder } from '../../../lib/board/board-recorder';
import { DecisionEvents, Limiter, RedisStore } from '../../../lib';
import { type CliIo, runCli } from '../../../lib/cli/redlimit.cli';
import { clusterNodes } from '../../support/cluster-handle';
import { createTestClient, redisUrl, uniquePrefix } from '../../support/redis';
import { startRedisSentinel, type StartedRedisSentinel } from '../../support/sentinel';

jest.setTimeout(60_000);

const nodes = clusterNodes();
const list = (addresses: ReadonlyArray<{ host: string; port: number }>) =>
  addresses.map(({ host, port }) => `${host}:${port}`).join(',');

interface Served {
  url: string;
  cookie: string;
  stop(): Promise<number>;
}

/** Starts `redlimit board` in this process; resolves once it printed its login link. */
async function serve(args: readonly string[]): Promise<Served> {
  const controller = new AbortController();
  let out = '';
  let printed!: () => void;
  const ready = new Promise<void>((resolve) => (printed = resolve));
  const io: CliIo = {
    env: {},
    stdout: {
      write: (text: string) => {
        out += text;
        if (out.includes('open http')) printed();
      },
    },
    stderr: { write: (text: string) => (out += text) },
    signal: controller.signal,
  };
  const done = runCli(['board', '--port', '0', ...args], io);
  await Promise.race([ready, done.then(() => Promise.reject(new Error(out)))]);
  const login = /open (\S+)/.exec(out)![1]!;
  const response = await fetch(login, { redirect: 'manual' });
  expect(response.status).toBe(303);
  const cookie = response.headers.get('set-cookie')!.split(';')[0]!;
  return {
    url: new URL(login).origin,
    cookie,
    stop: () => {
      controller.abort();
      return done;
    },
  };
}

describe.each([
  ['a single Redis', () => createTestClient(), () => ['--redis', redisUrl()]],
  ...(nodes
    ? [
        [
          'a Redis Cluster',
          () => new Cluster(nodes, { redisOptions: { maxRetriesPerRequest: 2 } }),
          () => ['--cluster', list(nodes)],
        ] as const,
      ]
    : []),
] as const)('redlimit board on %s', (_name, connect, target) => {
  let client: Redis | Cluster;
  let prefix: string;
  let limiter: Limiter;
  let recorder: BoardRecorder;

  beforeAll(() => {
    client = connect();
    prefix = uniquePrefix('cli-board');
    const store = new RedisStore({ client, prefix });
    const events = new DecisionEvents();
    limiter = new Limiter(
      store,
      {
        name: 'login',
        algorithm: 'fixed-window',
        limit: 2,
        window: '15m',
        block: { duration: '10m' },
      },
      { events },
    );
    recorder = new BoardRecorder(events, store.board(), { limiters: () => [limiter] });
    recorder.start();
  });

  afterAll(async () => {
    await recorder.stop();
    await client.quit();
  });

  it('refuses a browser without the login link, and a wrong token', async () => {
    const board = await serve([...target(), '--prefix', prefix]);
    try {
      expect((await fetch(`${board.url}/`)).status).toBe(403);
      expect(
        (await fetch(`${board.url}/?token=not-the-token`, { redirect: 'manual' })).status,
      ).toBe(403);
    } finally {
      expect(await board.stop()).toBe(0);
    }
  });

  it('shows the app’s lockout, unlocks it from a form and audits the unlock as the CLI’s', async () => {
    for (let i = 0; i < 3; i++) await limiter.consume('user:mallory');
    expect((await limiter.peek('user:mallory')).blockedUntil).toBeDefined();
    await recorder.flush();

    const board = await serve([...target(), '--prefix', prefix]);
    try {
      const headers = { cookie: board.cookie };
      const policies = await (await fetch(`${board.url}/`, { headers })).text();
      expect(policies).toContain('<strong>login</strong>');
      const locked = await fetch(`${board.url}/locked`, { headers });
      const page = await locked.text();
      expect(page).toContain('user:mallory');
      const csrfCookie = locked.headers.get('set-cookie')!.split(';')[0]!;
      const csrf = /name="csrf" value="([^"]+)"/.exec(page)![1]!;
      const unlock = await fetch(`${board.url}/unlock`, {
        method: 'POST',
        headers: {
          cookie: `${board.cookie}; ${csrfCookie}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ policy: 'login', key: 'user:mallory', csrf }).toString(),
      });
      expect(unlock.status).toBe(200);
      expect(await unlock.text()).toContain('Unlocked login for this key');
      expect((await limiter.consume('user:mallory')).allowed).toBe(true);
      const audit = await (await fetch(`${board.url}/audit`, { headers })).text();
      expect(audit).toMatch(/<td>cli(:[^<]+)?<\/td><td>unlock<\/td><td>cli<\/td>/);
    } finally {
      expect(await board.stop()).toBe(0);
    }
  });

  it('in read-only mode shows no unlock and refuses one', async () => {
    for (let i = 0; i < 3; i++) await limiter.consume('user:trudy');
    await recorder.flush();
    const board = await serve([...target(), '--prefix', prefix, '--read-only']);
    try {
      const locked = await fetch(`${board.url}/locked`, { headers: { cookie: board.cookie } });
      const page = await locked.text();
      expect(page).toContain('user:trudy');
      expect(page).not.toContain('>Unlock<');
      const csrfCookie = locked.headers.get('set-cookie')!.split(';')[0]!;
      const csrf = csrfCookie.split('=')[1]!;
      const unlock = await fetch(`${board.url}/unlock`, {
        method: 'POST',
        headers: {
          cookie: `${board.cookie}; ${csrfCookie}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ policy: 'login', key: 'user:trudy', csrf }).toString(),
      });
      expect(unlock.status).toBe(403);
      expect((await limiter.peek('user:trudy')).blockedUntil).toBeDefined();
    } finally {
      expect(await board.stop()).toBe(0);
    }
  });
});

(nodes ? describe : describe.skip)('redlimit board on Redis Sentinel', () => {
  let deployment: StartedRedisSentinel;
  beforeAll(async () => {
    deployment = await startRedisSentinel();
  });
  afterAll(() => deployment?.stop());

  it('shows the app’s lockout on the master the sentinels name, and unlocks it', async () => {
    const prefix = uniquePrefix('cli-board-sentinel');
    const store = new RedisStore({ client: await deployment.createClient(), prefix });
    const events = new DecisionEvents();
    const limiter = new Limiter(
      store,
      {
        name: 'login',
        algorithm: 'fixed-window',
        limit: 1,
        window: '15m',
        block: { duration: '10m' },
      },
      { events },
    );
    const recorder = new BoardRecorder(events, store.board(), { limiters: () => [limiter] });
    recorder.start();
    try {
      for (let i = 0; i < 2; i++) await limiter.consume('user:eve');
      await recorder.flush();
      const board = await serve([
        '--sentinel',
        list(deployment.sentinels),
        '--sentinel-name',
        deployment.name,
        '--prefix',
        prefix,
      ]);
      try {
        const locked = await fetch(`${board.url}/locked`, { headers: { cookie: board.cookie } });
        const page = await locked.text();
        expect(page).toContain('user:eve');
        const csrfCookie = locked.headers.get('set-cookie')!.split(';')[0]!;
        const csrf = /name="csrf" value="([^"]+)"/.exec(page)![1]!;
        const unlock = await fetch(`${board.url}/unlock`, {
          method: 'POST',
          headers: {
            cookie: `${board.cookie}; ${csrfCookie}`,
            'content-type': 'application/x-www-form-urlencoded',
          },
          body: new URLSearchParams({ policy: 'login', key: 'user:eve', csrf }).toString(),
        });
        expect(unlock.status).toBe(200);
        expect((await limiter.consume('user:eve')).allowed).toBe(true);
      } finally {
        expect(await board.stop()).toBe(0);
      }
    } finally {
      await recorder.stop();
    }
  });
});
