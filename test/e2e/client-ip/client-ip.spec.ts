import { canonicalIp, groupIp } from '../../../lib/nest';
import { createClientIpResolver } from '../../../lib/http/client-ip.util';
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { CountingStore } from '../support/counting-store';
import { clientIpApp } from './client-ip.app';

describe.each(PLATFORMS)('client IP on %s', (platform) => {
  let app: RunningApp;
  afterEach(() => app.close());

  const from = (forwardedFor: string, path = '/throttled') =>
    send({ 'x-forwarded-for': forwardedFor }, path).then((r) => r.status);
  const send = (headers: Record<string, string>, path = '/throttled') =>
    app.request(path, { method: path === '/attempt' ? 'POST' : 'GET', headers });
  const warnings = (pattern: RegExp) =>
    app.logs.filter((line) => line.startsWith('warn: ') && pattern.test(line));

  it('by default a spoofed X-Forwarded-For does not change the budget: the peer address counts', async () => {
    app = await startApp(clientIpApp(), platform);
    for (const path of ['/throttled', '/attempt']) {
      expect(await from('198.51.100.1', path)).toBe(200);
      expect(await from('198.51.100.2', path)).toBe(200);
      expect(await from('198.51.100.3', path)).toBe(429);
    }
  });

  it('behind a trusted proxy, X-Forwarded-For names the client', async () => {
    app = await startApp(clientIpApp({ trustedProxies: ['loopback'] }), platform);
    expect(await from('198.51.100.1')).toBe(200);
    expect(await from('198.51.100.1')).toBe(200);
    expect(await from('198.51.100.1')).toBe(429);
    expect(await from('198.51.100.2')).toBe(200);
    // Only trusted hops are skipped: a forged left-most entry does not help the client.
    expect(await from('203.0.113.50, 198.51.100.1')).toBe(429);
  });

  it('X-Forwarded-For entries with ports name their client, not the proxy', async () => {
    app = await startApp(clientIpApp({ trustedProxies: ['loopback'] }), platform);
    expect(await from('203.0.113.7:51234')).toBe(200);
    expect(await from('203.0.113.7:443')).toBe(200);
    expect(await from('203.0.113.7')).toBe(429); // one client, whatever its port
    expect(await from('198.51.100.9:80')).toBe(200); // another client is not charged as the proxy
    expect(await from('[2001:db8::1]:443')).toBe(200);
    expect(await from('[2001:db8::2]')).toBe(200);
    expect(await from('2001:db8::3')).toBe(429); // same /64
    expect(await from('198.51.100.10:80, 10.0.0.1:8080', '/attempt')).toBe(200); // 10/8 not trusted
  });

  it('oddities: a hop written by a trusted proxy that is not an address is refused with 400, never charged to a shared budget', async () => {
    const store = new CountingStore();
    app = await startApp(clientIpApp({ trustedProxies: ['loopback'] }, store), platform);
    for (const hop of ['010.0.0.1', 'unknown', '203.0.113.7:http', '[2001:db8::1', '1.2.3']) {
      for (const path of ['/throttled', '/attempt']) {
        const response = await send({ 'x-forwarded-for': `198.51.100.1, ${hop}` }, path);
        expect(response.status).toBe(400);
        expect(await response.json()).toMatchObject({ statusCode: 400, part: 'ip' });
      }
    }
    expect(store.consumes).toBe(0);
    // Garbage left of the first untrusted hop is never read: the client is that hop.
    expect(await from('garbage, 198.51.100.1')).toBe(200);
    expect(await from('010.0.0.1, 198.51.100.1')).toBe(200);
    expect(await from('198.51.100.1')).toBe(429);
    expect(warnings(/X-Forwarded-For/)).toHaveLength(1); // once, naming the header
    expect(warnings(/X-Forwarded-For/)[0]).toMatch(/"198\.51\.100\.1, 010\.0\.0\.1"/);
  });

  it("RFC 7239 Forwarded (clientIp.header: 'forwarded'): for= tokens, quoted IPv6 with port, obfuscated identifiers; unknown is refused", async () => {
    app = await startApp(
      clientIpApp({ trustedProxies: ['loopback'], header: 'forwarded' }),
      platform,
    );
    const forwarded = (value: string, path = '/throttled') =>
      send({ forwarded: value }, path).then((r) => r.status);
    expect(await forwarded('for=198.51.100.1;proto=https')).toBe(200);
    expect(await forwarded('For="198.51.100.1:4711"')).toBe(200);
    expect(await forwarded('for=198.51.100.1')).toBe(429);
    expect(await forwarded('for="[2001:db8:cafe::17]:4711"')).toBe(200);
    expect(await forwarded('for="[2001:db8:cafe::18]"')).toBe(200);
    expect(await forwarded('for="[2001:db8:cafe::19]"')).toBe(429);
    // A chain: the right-most element is the trusted proxy's view.
    expect(await forwarded('for=203.0.113.50, for=198.51.100.2;by=127.0.0.1')).toBe(200);
    expect(await forwarded('for=_hidden, for=127.0.0.1')).toBe(200); // walks past the trusted hop
    expect(await forwarded('for=_hidden')).toBe(200);
    expect(await forwarded('for=_hidden')).toBe(429); // the proxy's identifier names the client
    expect(await forwarded('for=_other')).toBe(200);
    expect(await forwarded('for=unknown')).toBe(400);
    expect(await forwarded('proto=https')).toBe(400); // an element without for=
    // X-Forwarded-For is not the configured header: a client cannot use it to change its budget.
    expect(await from('198.51.100.77', '/attempt')).toBe(200);
    expect(await from('198.51.100.78', '/attempt')).toBe(200);
    expect(await from('198.51.100.79', '/attempt')).toBe(429);
  });

  it.each(['cf-connecting-ip', 'true-client-ip', 'fly-client-ip', 'x-real-ip'] as const)(
    "clientIp.header: '%s' names the client when the peer is trusted, and is ignored otherwise",
    async (header) => {
      app = await startApp(clientIpApp({ trustedProxies: ['loopback'], header }), platform);
      expect((await send({ [header]: '198.51.100.1' })).status).toBe(200);
      expect((await send({ [header]: '198.51.100.1:1234' })).status).toBe(200);
      expect((await send({ [header]: '198.51.100.1' })).status).toBe(429);
      expect(
        (await send({ [header]: '198.51.100.2', 'x-forwarded-for': '198.51.100.1' })).status,
      ).toBe(200);
      expect((await send({ [header]: '198.51.100.1, 198.51.100.3' })).status).toBe(400);
      await app.close();

      // The peer (127.0.0.1) is not a trusted proxy here: the header changes nothing.
      app = await startApp(clientIpApp({ trustedProxies: ['10.0.0.0/8'], header }), platform);
      expect((await send({ [header]: '198.51.100.1' })).status).toBe(200);
      expect((await send({ [header]: '198.51.100.2' })).status).toBe(200);
      expect((await send({ [header]: '198.51.100.3' })).status).toBe(429);
    },
  );

  it('warns once when X-Forwarded-For arrives from a loopback or private peer that is not trusted', async () => {
    app = await startApp(clientIpApp(), platform);
    await from('198.51.100.1');
    await from('198.51.100.2', '/attempt');
    await send({});
    const warned = warnings(/X-Forwarded-For/);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatch(/from 127\.0\.0\.1, which is not in clientIp\.trustedProxies/);
  });

  it('a request whose peer address cannot be read is refused with 400 before anything is charged; warned once', async () => {
    const store = new CountingStore();
    app = await startApp(clientIpApp(undefined, store), platform);
    for (const path of ['/throttled', '/attempt', '/throttled']) {
      const response = await send({ 'x-drop-peer': '1' }, path);
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ statusCode: 400, part: 'ip' });
    }
    expect(store.consumes).toBe(0);
    expect(warnings(/peer address/)).toHaveLength(1);
    // Other requests are charged as usual: nothing was spent on a shared 'unknown' budget.
    expect((await send({})).status).toBe(200);
    expect((await send({})).status).toBe(200);
    expect((await send({})).status).toBe(429);
  });

  it('IPv6 clients are grouped by /64; IPv4-mapped IPv6 counts as IPv4', async () => {
    app = await startApp(clientIpApp({ trustedProxies: ['127.0.0.1'] }), platform);
    expect(await from('2001:db8:1:2::1')).toBe(200);
    expect(await from('2001:db8:1:2:ffff::9')).toBe(200);
    expect(await from('2001:db8:1:2::abcd')).toBe(429); // same /64
    expect(await from('2001:db8:1:3::1')).toBe(200); // next /64
    expect(await from('198.51.100.9')).toBe(200);
    expect(await from('::ffff:198.51.100.9')).toBe(200);
    expect(await from('198.51.100.9')).toBe(429);
  });
});

describe('client IP resolution', () => {
  it('canonical forms', () => {
    expect(canonicalIp('::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(canonicalIp('[2001:DB8::1]')).toBe('2001:db8:0:0:0:0:0:1');
    expect(canonicalIp('fe80::1%eth0')).toBe('fe80:0:0:0:0:0:0:1');
    expect(canonicalIp('not an ip')).toBeUndefined();
    expect(groupIp('2001:db8:aaaa:bbbb:1:2:3:4', 64)).toBe('2001:db8:aaaa:bbbb::/64');
    expect(groupIp('2001:db8:aaaa:bbff::', 56)).toBe('2001:db8:aaaa:bb00::/56');
    expect(groupIp('203.0.113.9', 64)).toBe('203.0.113.9');
  });

  it('walks X-Forwarded-For from the right past trusted proxies only', () => {
    const resolve = createClientIpResolver({ trustedProxies: ['10.0.0.0/8', 'loopback'] });
    expect(resolve('127.0.0.1', '198.51.100.7, 10.1.2.3')).toBe('198.51.100.7');
    expect(resolve('127.0.0.1', '1.1.1.1, 198.51.100.7, 10.1.2.3')).toBe('198.51.100.7');
    expect(resolve('203.0.113.1', '198.51.100.7')).toBe('203.0.113.1'); // peer not trusted
    expect(resolve('127.0.0.1', 'garbage')).toBeUndefined(); // a trusted hop that names no one
    expect(resolve('127.0.0.1', '198.51.100.7:8080')).toBe('198.51.100.7');
    expect(resolve('127.0.0.1', '[2001:db8::9]:8080')).toBe('2001:db8:0:0::/64');
    expect(resolve(undefined, '198.51.100.7')).toBeUndefined();
    expect(createClientIpResolver()('127.0.0.1', '198.51.100.7')).toBe('127.0.0.1');
  });

  it('answers the same for an address seen before, and after more addresses than it remembers', () => {
    const resolve = createClientIpResolver({ trustedProxies: ['10.0.0.0/8'], ipv6Subnet: 48 });
    const expected = (i: number) => `2001:db8:${i.toString(16)}::/48`;
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 3000; i++) {
        expect(resolve(`2001:db8:${i.toString(16)}::1`)).toBe(expected(i));
        expect(resolve('10.0.0.1', `2001:db8:${i.toString(16)}::2`)).toBe(expected(i));
      }
    }
    expect(resolve.isTrusted('10.9.9.9')).toBe(true);
    expect(resolve.isTrusted('11.0.0.1')).toBe(false);
    expect(resolve('not an address')).toBeUndefined();
    expect(resolve('not an address')).toBeUndefined();
  });

  it('rejects a trusted proxy entry it cannot read, naming it', () => {
    expect(() => createClientIpResolver({ trustedProxies: ['10.0.0.0/33'] })).toThrow(
      /'10\.0\.0\.0\/33' is not an IP address/,
    );
    expect(() => createClientIpResolver({ ipv6Subnet: 0 })).toThrow(/ipv6Subnet/);
    expect(() => createClientIpResolver({ header: 'cf-connecting-ip' })).toThrow(
      /clientIp\.header 'cf-connecting-ip' is believed only from trusted proxies: set clientIp\.trustedProxies/,
    );
    expect(() =>
      createClientIpResolver({ trustedProxies: ['loopback'], header: 'x-client-ip' as never }),
    ).toThrow(/clientIp\.header must be one of 'x-forwarded-for', 'forwarded', 'cf-connecting-ip'/);
    expect(() => createClientIpResolver({ trustedProxy: ['loopback'] } as never)).toThrow(
      /clientIp has unknown option 'trustedProxy'; expected trustedProxies, trustedHops, ipv6Subnet, header/,
    );
  });
});
