/**
 * Attacks on client IP resolution from the review of issue 26: a client choosing its own address
 * with an unclosed quote in `Forwarded` (finding 1), a client with a private address forging hops
 * when a whole private range is trusted (finding 5), and an app on a Unix socket behind a proxy
 * (finding 9).
 */
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { CountingStore } from '../support/counting-store';
import { clientIpApp, handled } from './client-ip.app';
import { rawRequest, startUnixApp, type UnixApp } from './client-ip.requests';

/** What the trusted proxy (the test's 127.0.0.1) says its own peer was. */
const REAL_CLIENT = '203.0.113.7';

describe.each(PLATFORMS)('review-client-ip on %s', (platform) => {
  let app: RunningApp | UnixApp | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });
  beforeEach(() => {
    handled.throttled = 0;
    handled.attempt = 0;
  });

  const running = (): RunningApp => app as RunningApp;
  const send = (headers: Record<string, string>, path = '/throttled') =>
    running()
      .request(path, { method: path === '/attempt' ? 'POST' : 'GET', headers })
      .then((r) => r.status);
  const lines = (header: ReadonlyArray<readonly [string, string]>, path = '/throttled') =>
    rawRequest(running().url, path === '/attempt' ? 'POST' : 'GET', path, header);
  const warnings = (logs: string[], pattern: RegExp) =>
    logs.filter((line) => line.startsWith('warn: ') && pattern.test(line));

  describe('finding 1: Forwarded that does not parse under RFC 7239 names no one', () => {
    it('an unclosed quote cannot hide the proxy’s for= (same line, or a second line Node joins): 400, nothing charged', async () => {
      const store = new CountingStore();
      app = await startApp(
        clientIpApp({ trustedProxies: ['loopback'], header: 'forwarded' }, store),
        platform,
      );
      const sameLine: number[] = [];
      const twoLines: number[] = [];
      for (let i = 1; i <= 6; i++) {
        const forged = `for=198.51.100.${i};x="`;
        sameLine.push(await send({ forwarded: `${forged}, for=${REAL_CLIENT}` }));
        twoLines.push(
          await lines([
            ['Forwarded', forged],
            ['Forwarded', `for=${REAL_CLIENT}`],
          ]),
        );
      }
      expect(sameLine).toEqual([400, 400, 400, 400, 400, 400]);
      expect(twoLines).toEqual([400, 400, 400, 400, 400, 400]);
      expect(store.consumes).toBe(0);
      expect(handled.throttled).toBe(0);
      // A well-formed chain still names the proxy's client: one budget, whatever is left of it.
      expect(await send({ forwarded: `for=198.51.100.1, for=${REAL_CLIENT}` })).toBe(200);
      expect(
        await lines([
          ['Forwarded', 'for=198.51.100.2'],
          ['Forwarded', `for=${REAL_CLIENT}`],
        ]),
      ).toBe(200);
      expect(await send({ forwarded: `for=${REAL_CLIENT};proto=https` })).toBe(429);
      expect(warnings(running().logs, /Forwarded/)).toHaveLength(1);
    });

    it('with allow.ips as in abuse-controls.md, for=10.1.2.9;x=" is no allowed host: 30 sign-in guesses, none let through', async () => {
      const store = new CountingStore();
      app = await startApp(
        clientIpApp({ trustedProxies: ['loopback'], header: 'forwarded' }, store, {
          allow: { ips: ['10.1.2.0/24'] },
        }),
        platform,
      );
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++) {
        statuses.push(
          await send({ forwarded: `for=10.1.2.9;x=", for=${REAL_CLIENT}` }, '/attempt'),
        );
      }
      expect(statuses.filter((s) => s !== 400)).toEqual([]);
      expect(handled.attempt).toBe(0);
      // The real allowed host is still exempt.
      for (let i = 0; i < 3; i++)
        expect(await send({ forwarded: 'for=10.1.2.9' }, '/attempt')).toBe(200);
      expect(store.consumes).toBe(0);
    });

    it.each([
      ['an unclosed quote', 'for=198.51.100.1;x="'],
      ['an unclosed quote in for=', 'for="198.51.100.1'],
      ['an escaped closing quote', 'for=198.51.100.1;x="a\\"'],
      ['a repeated for= in one element', 'for=198.51.100.1;for=198.51.100.9'],
      ['a repeated for= in other case', 'for=198.51.100.1;FOR=198.51.100.9'],
      ['text after a quoted value', 'for="198.51.100.1"x'],
      ['a port outside quotes', 'for=198.51.100.1:80'],
      ['IPv6 outside quotes', 'for=[2001:db8::1]'],
      ['spaces around =', 'for = 198.51.100.1'],
      ['a quoted name', '"for"=198.51.100.1'],
      ['a backslash outside quotes', 'for=198.51.100.1\\'],
      ['a pair without =', 'for'],
      ['an empty value', 'for='],
    ])(
      'the class: %s left of the proxy’s element is a 400, on both routes, nothing charged',
      async (_name, forged) => {
        const store = new CountingStore();
        app = await startApp(
          clientIpApp({ trustedProxies: ['loopback'], header: 'forwarded' }, store),
          platform,
        );
        for (const path of ['/throttled', '/attempt']) {
          expect(await send({ forwarded: `${forged}, for=${REAL_CLIENT}` }, path)).toBe(400);
          expect(
            await lines(
              [
                ['Forwarded', forged],
                ['Forwarded', `for=${REAL_CLIENT}`],
              ],
              path,
            ),
          ).toBe(400);
        }
        expect(store.consumes).toBe(0);
      },
    );

    it('header lines in any order: the proxy’s line is the last one, and names the client (X-Forwarded-For too)', async () => {
      app = await startApp(clientIpApp({ trustedProxies: ['loopback'] }), platform);
      const statuses: number[] = [];
      for (const client of [
        ['198.51.100.1"', ' ;x="'],
        [' ;x="', '198.51.100.1"'],
        ['', ',,'],
      ]) {
        statuses.push(
          await lines([
            ...client.map((value) => ['X-Forwarded-For', value] as const),
            ['X-Forwarded-For', REAL_CLIENT],
          ]),
        );
      }
      expect(statuses).toEqual([200, 200, 429]);
    });

    it('obs-fold (a header line continued on the next) never reaches the parser: 400, nothing charged', async () => {
      const store = new CountingStore();
      app = await startApp(
        clientIpApp({ trustedProxies: ['loopback'], header: 'forwarded' }, store),
        platform,
      );
      expect(await lines([['Forwarded', `for=198.51.100.1;x=",\r\n for=${REAL_CLIENT}`]])).toBe(
        400,
      );
      expect(store.consumes).toBe(0);
    });
  });

  describe('finding 5: trustedHops bounds how many trusted proxies a chain may claim', () => {
    it("trustedProxies: ['private'] with trustedHops: 1: a VPN client's forged hops change nothing", async () => {
      // 127.0.0.1 stands for the load balancer (10.0.0.2 in the review); 10.8.0.5 is a VPN client
      // that sent X-Forwarded-For: 198.51.100.99 through it.
      app = await startApp(
        clientIpApp({ trustedProxies: ['loopback', 'private'], trustedHops: 1 }),
        platform,
      );
      const statuses: number[] = [];
      for (let i = 1; i <= 6; i++) {
        statuses.push(await send({ 'x-forwarded-for': `198.51.100.${i}, 10.8.0.5` }));
      }
      expect(statuses).toEqual([200, 200, 429, 429, 429, 429]);
      expect(await send({ 'x-forwarded-for': '198.51.100.1, 10.8.0.5' }, '/attempt')).toBe(200);
      expect(await send({ 'x-forwarded-for': '198.51.100.2, 10.8.0.5' }, '/attempt')).toBe(200);
      expect(await send({ 'x-forwarded-for': '198.51.100.3, 10.8.0.5' }, '/attempt')).toBe(429);
    });

    it("without trustedHops, trustedProxies: ['private'] still believes every private hop (what the startup warning is about)", async () => {
      app = await startApp(clientIpApp({ trustedProxies: ['loopback', 'private'] }), platform);
      const statuses: number[] = [];
      for (let i = 1; i <= 6; i++) {
        statuses.push(await send({ 'x-forwarded-for': `198.51.100.${i}, 10.8.0.5` }));
      }
      expect(statuses).toEqual([200, 200, 200, 200, 200, 200]); // a fresh budget per request
    });

    it('the class: a chain is walked past at most trustedHops proxies, and stops at the first untrusted hop', async () => {
      app = await startApp(
        clientIpApp({ trustedProxies: ['loopback', 'private'], trustedHops: 2 }),
        platform,
      );
      // Two proxies: the peer and 10.0.0.3; 10.8.0.5 is the client, whatever it wrote.
      for (let i = 1; i <= 3; i++) {
        expect(await send({ 'x-forwarded-for': `198.51.100.${i}, 10.8.0.5, 10.0.0.3` })).toBe(
          i < 3 ? 200 : 429,
        );
      }
      // An untrusted hop ends the walk before the count does.
      expect(await send({ 'x-forwarded-for': '10.9.9.9, 198.51.100.50' })).toBe(200);
      expect(await send({ 'x-forwarded-for': '10.9.9.8, 198.51.100.50' })).toBe(200);
      expect(await send({ 'x-forwarded-for': '10.9.9.7, 198.51.100.50' })).toBe(429);
      await running().close();

      app = await startApp(
        clientIpApp({
          trustedProxies: ['loopback', 'private'],
          trustedHops: 1,
          header: 'forwarded',
        }),
        platform,
      );
      for (let i = 1; i <= 3; i++) {
        expect(await send({ forwarded: `for=198.51.100.${i}, for=10.8.0.5` })).toBe(
          i < 3 ? 200 : 429,
        );
      }
    });

    it('an odd trustedHops is an error at startup naming it', async () => {
      for (const trustedHops of [0, -1, 1.5, Infinity, NaN, '1']) {
        await expect(
          startApp(
            clientIpApp({ trustedProxies: ['loopback'], trustedHops: trustedHops as number }),
            platform,
          ),
        ).rejects.toThrow(/clientIp\.trustedHops must be a whole number ≥ 1/);
      }
      await expect(startApp(clientIpApp({ trustedHops: 1 }), platform)).rejects.toThrow(
        /clientIp\.trustedHops counts hops through clientIp\.trustedProxies/,
      );
      await expect(
        startApp(
          clientIpApp({ trustedProxies: ['loopback'], trustedHops: 1, header: 'x-real-ip' }),
          platform,
        ),
      ).rejects.toThrow(/clientIp\.trustedHops applies to 'x-forwarded-for' and 'forwarded'/);
    });

    describe('in production', () => {
      const before = process.env.NODE_ENV;
      afterEach(() => {
        process.env.NODE_ENV = before;
      });

      it.each([
        [['private'], "'private'"],
        [['loopback', '10.0.0.0/8'], "'10.0.0.0/8'"],
        [['0.0.0.0/0'], "'0.0.0.0/0'"],
        [['fd00::/8'], "'fd00::/8'"],
      ])(
        'trusting %j without trustedHops warns once at startup, naming the setting and the entry',
        async (trustedProxies, named) => {
          process.env.NODE_ENV = 'production';
          app = await startApp(clientIpApp({ trustedProxies }), platform);
          await send({ 'x-forwarded-for': '198.51.100.1' });
          await send({ 'x-forwarded-for': '198.51.100.1' }, '/attempt');
          const warned = warnings(running().logs, /trustedProxies entry/);
          expect(warned).toHaveLength(1);
          expect(warned[0]).toContain(`clientIp.trustedProxies entry ${named}`);
          expect(warned[0]).toMatch(/clientIp\.trustedHops/);
        },
      );

      it.each([
        [{ trustedProxies: ['private'], trustedHops: 1 }, 'production'],
        [{ trustedProxies: ['loopback', '10.0.0.0/24', 'fd00::/16'] }, 'production'],
        [{ trustedProxies: ['private'] }, 'development'],
        [{ trustedProxies: ['private'] }, undefined],
      ])('no warning for %j under NODE_ENV=%s', async (clientIp, env) => {
        if (env === undefined) delete process.env.NODE_ENV;
        else process.env.NODE_ENV = env;
        app = await startApp(clientIpApp(clientIp), platform);
        await send({ 'x-forwarded-for': '198.51.100.1' });
        expect(warnings(running().logs, /trustedProxies entry/)).toEqual([]);
      });
    });
  });

  describe('finding 9: an app on a Unix socket behind a proxy', () => {
    it("trustedProxies: ['unix'] believes the proxy on the socket", async () => {
      const store = new CountingStore();
      const unix = await startUnixApp(clientIpApp({ trustedProxies: ['unix'] }, store), platform);
      app = unix;
      const xff = (client: string) => ({ 'x-forwarded-for': client });
      expect(await unix.request('GET', '/throttled', xff('198.51.100.1'))).toBe(200);
      expect(await unix.request('GET', '/throttled', xff('198.51.100.1'))).toBe(200);
      expect(await unix.request('GET', '/throttled', xff('198.51.100.1'))).toBe(429);
      expect(await unix.request('GET', '/throttled', xff('198.51.100.2'))).toBe(200);
      expect(await unix.request('POST', '/attempt', xff('198.51.100.1'))).toBe(200);
      // The proxy said nothing: no client to charge (never one budget for everyone on the socket).
      const consumed = store.consumes;
      expect(await unix.request('GET', '/throttled')).toBe(400);
      expect(await unix.request('POST', '/attempt')).toBe(400);
      expect(store.consumes).toBe(consumed);
      expect(warnings(unix.logs, /client-IP|peer address/)).toEqual([]);
      expect(warnings(unix.logs, /Unix socket/)).toHaveLength(1);
      expect(warnings(unix.logs, /Unix socket/)[0]).toMatch(/sent no X-Forwarded-For/);
    });

    it("trustedProxies: ['unix'] with trustedHops and a single-address header", async () => {
      const unix = await startUnixApp(
        clientIpApp({ trustedProxies: ['unix', 'private'], trustedHops: 1 }),
        platform,
      );
      app = unix;
      const xff = (value: string) => ({ 'x-forwarded-for': value });
      expect(await unix.request('GET', '/throttled', xff('198.51.100.1, 10.8.0.5'))).toBe(200);
      expect(await unix.request('GET', '/throttled', xff('198.51.100.2, 10.8.0.5'))).toBe(200);
      expect(await unix.request('GET', '/throttled', xff('198.51.100.3, 10.8.0.5'))).toBe(429);
      await unix.close();

      const real = await startUnixApp(
        clientIpApp({ trustedProxies: ['unix'], header: 'x-real-ip' }),
        platform,
      );
      app = real;
      expect(await real.request('GET', '/throttled', { 'x-real-ip': '198.51.100.1' })).toBe(200);
      expect(await real.request('GET', '/throttled', { 'x-real-ip': '198.51.100.1' })).toBe(200);
      expect(await real.request('GET', '/throttled', { 'x-real-ip': '198.51.100.1' })).toBe(429);
    });

    it("without 'unix' trusted: 400 on guarded routes, and the warning names the Unix socket and the setting, not the client", async () => {
      const store = new CountingStore();
      const unix = await startUnixApp(
        clientIpApp({ trustedProxies: ['loopback'] }, store),
        platform,
      );
      app = unix;
      expect(await unix.request('GET', '/throttled', { 'x-forwarded-for': '198.51.100.1' })).toBe(
        400,
      );
      expect(await unix.request('POST', '/attempt')).toBe(400);
      expect(store.consumes).toBe(0);
      expect(warnings(unix.logs, /reset the connection/)).toEqual([]);
      const warned = warnings(unix.logs, /Unix socket/);
      expect(warned).toHaveLength(1);
      expect(warned[0]).toMatch(/add 'unix' to clientIp\.trustedProxies/);
    });
  });
});
