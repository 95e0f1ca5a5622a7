import { canonicalIp, createClientIpResolver, groupIp } from '../../../lib/nest';
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { clientIpApp } from './client-ip.app';

describe.each(PLATFORMS)('client IP on %s', (platform) => {
  let app: RunningApp;
  afterEach(() => app.close());

  const from = (forwardedFor: string, path = '/throttled') =>
    app
      .request(path, {
        method: path === '/attempt' ? 'POST' : 'GET',
        headers: { 'x-forwarded-for': forwardedFor },
      })
      .then((r) => r.status);

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
    expect(resolve('127.0.0.1', 'garbage')).toBe('127.0.0.1');
    expect(resolve(undefined, '198.51.100.7')).toBe('unknown');
    expect(createClientIpResolver()('127.0.0.1', '198.51.100.7')).toBe('127.0.0.1');
  });

  it('rejects a trusted proxy entry it cannot read, naming it', () => {
    expect(() => createClientIpResolver({ trustedProxies: ['10.0.0.0/33'] })).toThrow(
      /'10\.0\.0\.0\/33' is not an IP address/,
    );
    expect(() => createClientIpResolver({ ipv6Subnet: 0 })).toThrow(/ipv6Subnet/);
  });
});
