import { compileAccessList } from '../../lib/http/access-list.util';
import { createClientIpResolver } from '../../lib/http/client-ip.util';
import { ipRangeList } from '../../lib/http/ip-range.util';

describe('allow and deny lists: matching', () => {
  it('IPv4: single addresses and CIDR ranges, nothing outside them', () => {
    const list = compileAccessList(
      { ips: ['203.0.113.7', '10.0.0.0/8', '192.0.2.128/25'] },
      'deny',
    )!;
    expect(list.matches({ ip: '203.0.113.7' })).toBe(true);
    expect(list.matches({ ip: '203.0.113.8' })).toBe(false);
    expect(list.matches({ ip: '10.255.255.255' })).toBe(true);
    expect(list.matches({ ip: '11.0.0.0' })).toBe(false);
    expect(list.matches({ ip: '192.0.2.128' })).toBe(true);
    expect(list.matches({ ip: '192.0.2.127' })).toBe(false);
  });

  it('IPv6: ranges and single addresses in any spelling; IPv4-mapped clients match IPv4 entries', () => {
    const list = compileAccessList(
      { ips: ['2001:db8:aaaa::/48', '2001:DB8::1', '10.0.0.0/8'] },
      'allow',
    )!;
    expect(list.matches({ ip: '2001:db8:aaaa:ffff::9' })).toBe(true);
    expect(list.matches({ ip: '2001:db8:aaab::1' })).toBe(false);
    expect(list.matches({ ip: '2001:0db8:0000:0000:0000:0000:0000:0001' })).toBe(true);
    expect(list.matches({ ip: '2001:db8::2' })).toBe(false);
    expect(list.matches({ ip: '::ffff:10.1.2.3' })).toBe(true);
    expect(list.matches({ ip: '[2001:db8::1]' })).toBe(true);
  });

  it('an IPv4-mapped range is its IPv4 range; named ranges work as in trustedProxies', () => {
    const list = compileAccessList({ ips: ['::ffff:10.0.0.0/104', 'loopback'] }, 'allow')!;
    expect(list.matches({ ip: '10.9.8.7' })).toBe(true);
    expect(list.matches({ ip: '11.0.0.1' })).toBe(false);
    expect(list.matches({ ip: '127.0.0.1' })).toBe(true);
    expect(list.matches({ ip: '::1' })).toBe(true);
  });

  it('a client that is not an address (a proxy-obfuscated name, nothing) matches no IP entry', () => {
    const list = compileAccessList({ ips: ['0.0.0.0/0', '::/0'] }, 'deny')!;
    expect(list.matches({ ip: '_hidden' })).toBe(false);
    expect(list.matches({})).toBe(false);
    expect(list.matches({ ip: '198.51.100.1' })).toBe(true);
  });

  it('API keys: exact (case-sensitive, trimmed) matches only', () => {
    const list = compileAccessList({ apiKeys: ['sk_live_abc', 'sk_live_def'] }, 'allow')!;
    expect(list.matches({ apiKey: 'sk_live_def' })).toBe(true);
    expect(list.matches({ apiKey: ' sk_live_abc ' })).toBe(true);
    expect(list.matches({ apiKey: 'SK_LIVE_ABC' })).toBe(false);
    expect(list.matches({ apiKey: 'sk_live_ab' })).toBe(false);
    expect(list.matches({ apiKey: '' })).toBe(false);
    expect(list.matches({})).toBe(false);
  });

  it('user agents: strings match exactly, RegExps by test — also a global one, every time', () => {
    const list = compileAccessList(
      { userAgents: ['curl/8.5.0', /^BadBot\//, /scanner/gi] },
      'deny',
    )!;
    expect(list.matches({ userAgent: 'curl/8.5.0' })).toBe(true);
    expect(list.matches({ userAgent: 'curl/8.5.1' })).toBe(false);
    expect(list.matches({ userAgent: 'BadBot/2.1' })).toBe(true);
    expect(list.matches({ userAgent: 'GoodBot/1 BadBot/2' })).toBe(false);
    // /g keeps lastIndex between tests: three in a row must all match.
    for (let i = 0; i < 3; i++) expect(list.matches({ userAgent: 'Mass SCANNER 1.0' })).toBe(true);
    expect(list.matches({})).toBe(false);
  });

  it('any one field matching is a match; the list says which request values it needs', () => {
    const list = compileAccessList({ ips: ['10.0.0.0/8'], userAgents: ['probe'] }, 'allow')!;
    expect(list.matches({ ip: '192.0.2.1', userAgent: 'probe' })).toBe(true);
    expect(list.matches({ ip: '10.0.0.1', userAgent: 'browser' })).toBe(true);
    expect(list).toMatchObject({ needsIp: true, needsApiKey: false, needsUserAgent: true });
  });

  it('an unset or empty list is no list', () => {
    expect(compileAccessList(undefined, 'allow')).toBeUndefined();
    expect(compileAccessList({}, 'allow')).toBeUndefined();
    expect(compileAccessList({ ips: [], apiKeys: [], userAgents: [] }, 'deny')).toBeUndefined();
  });
});

describe('allow and deny lists: validation names what is wrong', () => {
  const compile =
    (value: unknown, option = 'deny') =>
    () =>
      compileAccessList(value, option);

  it('an invalid address or range', () => {
    expect(compile({ ips: ['10.0.0.0/33'] })).toThrow(
      "RedlimitModule deny.ips: '10.0.0.0/33' is not an IP address, a CIDR range or one of loopback, private, linklocal",
    );
    expect(compile({ ips: ['2001:db8::/129'] })).toThrow(/'2001:db8::\/129' is not an IP address/);
    expect(compile({ ips: ['10.0.0.0/'] })).toThrow(/'10\.0\.0\.0\/' is not an IP address/);
    expect(compile({ ips: ['010.0.0.1'] })).toThrow(/'010\.0\.0\.1' is not an IP address/);
    expect(compile({ ips: ['example.com'] }, 'allow')).toThrow(
      /^RedlimitModule allow\.ips: 'example\.com'/,
    );
    expect(compile({ ips: [42] })).toThrow(/deny\.ips: '42' is not an IP address/);
  });

  it('a field that is not an array', () => {
    expect(compile({ ips: '10.0.0.1' })).toThrow(
      'RedlimitModule deny.ips must be an array; got "10.0.0.1"',
    );
    expect(compile({ apiKeys: 'k' }, 'allow')).toThrow(
      'RedlimitModule allow.apiKeys must be an array',
    );
    expect(compile({ userAgents: /bot/ })).toThrow(
      'RedlimitModule deny.userAgents must be an array',
    );
  });

  it('an unknown field, or a list that is not an object', () => {
    expect(compile({ ip: ['10.0.0.1'] })).toThrow(
      "RedlimitModule deny has unknown option 'ip'; expected ips, apiKeys, userAgents",
    );
    expect(compile(['10.0.0.1'], 'allow')).toThrow(
      'RedlimitModule allow must be an object { ips?, apiKeys?, userAgents? }; got an array',
    );
    expect(compile(null)).toThrow(/deny must be an object/);
  });

  it('an empty API key, a user agent of another type', () => {
    expect(compile({ apiKeys: ['ok', ' '] })).toThrow(
      'RedlimitModule deny.apiKeys[1] must be a non-empty string',
    );
    expect(compile({ userAgents: ['a', 3] })).toThrow(
      'RedlimitModule deny.userAgents[1] must be a string or a RegExp; got 3',
    );
  });

  it('trustedProxies keeps its own messages through the shared range parser', () => {
    expect(() => ipRangeList(['nope'], 'clientIp.trustedProxies')).toThrow(
      /^clientIp\.trustedProxies: 'nope' is not an IP address/,
    );
    expect(() => createClientIpResolver({ trustedProxies: ['10.0.0.0/'] })).toThrow(
      /'10\.0\.0\.0\/' is not an IP address/,
    );
  });
});
