/**
 * Every client-IP header parser, fuzzed: `Forwarded` against a reference grammar written from the
 * ABNF of RFC 7239 and RFC 7230 (regular expressions, where the library scans by hand),
 * `X-Forwarded-For` and the single-address headers against their own reference; and the property
 * that matters: whatever a client sends (quotes, escapes, empty elements, repeated parameters,
 * obs-fold, odd whitespace, several header lines in any order), once trusted proxies have appended
 * what they saw, the resolved client is the right-most untrusted hop they wrote, or no one (400).
 */
import fc from 'fast-check';
import { isIP, isIPv4, isIPv6 } from 'node:net';
import { createClientIpResolver } from '../../lib/http/client-ip.util';
import type { ClientIpHeader } from '../../lib/config/redlimit-options.interface';
import { canonicalIp, groupIp } from '../../lib/http/ip-address.util';

/** Runs per property (`REDLIMIT_PROPERTY_RUNS` for a deeper search): a few seconds in all. */
const RUNS = Math.max(400, Number(process.env.REDLIMIT_PROPERTY_RUNS ?? 0));

// ---- the reference grammar ----------------------------------------------------------------

const OWS = '[ \\t]*';
const TOKEN = "[!#$%&'*+\\-.^_`|~0-9A-Za-z]+";
const QUOTED =
  '"(?:[\\t \\x21\\x23-\\x5B\\x5D-\\x7E\\x80-\\xFF]|\\\\[\\t \\x21-\\x7E\\x80-\\xFF])*"';
const PAIR = `${TOKEN}=(?:${TOKEN}|${QUOTED})`;
const ELEMENT = `(?:${PAIR})?(?:${OWS};${OWS}(?:${PAIR})?)*`;
/** RFC 7239 `1#forwarded-element` with RFC 7230's empty list elements, OWS around `;` allowed. */
const FORWARDED = new RegExp(`^${OWS}(?:${ELEMENT})?(?:${OWS},${OWS}(?:${ELEMENT})?)*${OWS}$`);
const PARTS = new RegExp(`(${TOKEN})=(${TOKEN}|${QUOTED})|([,;])`, 'g');

/**
 * The elements of a Forwarded value, each as its `for=` value (unquoted) or `null` for none;
 * `undefined` when the value does not parse (including a parameter repeated in an element).
 */
function referenceForwarded(value: string): Array<string | null> | undefined {
  if (!FORWARDED.test(value)) return undefined;
  const elements: Array<string | null> = [];
  let names = new Set<string>();
  let forValue: string | null = null;
  let nonEmpty = false;
  const close = () => {
    if (nonEmpty) elements.push(forValue);
    names = new Set();
    forValue = null;
    nonEmpty = false;
  };
  for (const [, name, raw, separator] of value.matchAll(PARTS)) {
    if (separator === ',') {
      close();
      continue;
    }
    nonEmpty = true;
    if (separator === ';') continue;
    const lower = name!.toLowerCase();
    if (names.has(lower)) return undefined;
    names.add(lower);
    if (lower === 'for') {
      forValue = raw!.startsWith('"') ? raw!.slice(1, -1).replace(/\\([\s\S])/g, '$1') : raw!;
    }
  }
  close();
  return elements;
}

const OBF = '_[A-Za-z0-9._-]+';
const NODE = new RegExp(
  `^(?:([0-9.]+)|\\[([0-9A-Fa-f:.]+)\\]|(${OBF}))(?::(?:[0-9]{1,5}|${OBF}))?$`,
);

/** RFC 7239 `node`: an address, or an obfuscated name (kept as it is); else no one. */
function referenceNode(value: string): string | undefined {
  const match = NODE.exec(value);
  if (!match) return undefined;
  if (match[3] !== undefined) return match[3];
  if (match[1] !== undefined) return isIPv4(match[1]) ? match[1] : undefined;
  return isIPv6(match[2]!) ? match[2] : undefined;
}

/** One X-Forwarded-For hop or single-address header value: an address, optionally with a port. */
function referenceHop(value: string): string | undefined {
  const text = value.replace(/^[ \t]+|[ \t]+$/g, '');
  const bracketed = /^\[([^\]]*)\](?::[0-9]{1,5})?$/.exec(text);
  if (bracketed)
    return isIPv6(bracketed[1]!) && !bracketed[1]!.includes('%') ? bracketed[1] : undefined;
  const withPort = /^([0-9.]+):[0-9]{1,5}$/.exec(text);
  if (withPort) return isIPv4(withPort[1]!) ? withPort[1] : undefined;
  return isIP(text) !== 0 ? text : undefined;
}

const TRUSTED = ['loopback', '10.0.0.0/8'];
const isTrusted = (address: string) => {
  const canonical = canonicalIp(address)!;
  return canonical === '::1' || canonical === '0:0:0:0:0:0:0:1' || /^(127|10)\./.test(canonical);
};

/** The client the reference reads: walk from the right past at most `hops` trusted proxies. */
function referenceResolve(
  header: ClientIpHeader,
  peer: string,
  value: string,
  hops = Infinity,
): string | undefined {
  const finish = (address: string) =>
    address.startsWith('_') ? address : groupIp(canonicalIp(address)!, 64);
  if (!isTrusted(peer)) return finish(peer);
  if (header !== 'x-forwarded-for' && header !== 'forwarded') {
    const single = referenceHop(value);
    return single === undefined ? undefined : finish(single);
  }
  let chain: Array<string | null>;
  if (header === 'forwarded') {
    const parsed = referenceForwarded(value);
    if (parsed === undefined) return undefined;
    chain = parsed;
  } else {
    chain = value.split(',').filter((hop) => !/^[ \t]*$/.test(hop));
  }
  let client = peer;
  for (let walked = 0; walked < hops && chain.length > 0 && isTrusted(client); walked++) {
    const hop = chain.pop()!;
    if (hop === null) return undefined;
    const address = header === 'forwarded' ? referenceNode(hop) : referenceHop(hop);
    if (address === undefined) return undefined;
    if (address.startsWith('_')) return address;
    client = address;
  }
  return finish(client);
}

// ---- generators ------------------------------------------------------------------------------

/** Pieces a client strings together: whole parameters, addresses, and every awkward character. */
const piece = fc.constantFrom(
  'for=',
  'For=',
  'FOR=',
  'proto=https',
  'by=',
  'x=',
  '198.51.100.1',
  '10.0.0.1',
  '127.0.0.1',
  '010.0.0.1',
  '2001:db8::1',
  '[2001:db8::1]',
  '"[2001:db8::1]:443"',
  '"198.51.100.1:80"',
  '198.51.100.1:80',
  '"_hidden"',
  '_hidden',
  'unknown',
  ':',
  '_p',
  '%eth0',
  '"',
  '\\',
  '\\"',
  ',',
  ', ',
  ';',
  '=',
  ' ',
  '\t',
  '\r\n ',
  '\n',
  '\u00a0',
  '\u00e9',
  '\u0000',
  '\u007f',
  '\u2028',
  '[',
  ']',
  'a',
  '0',
);
const pieces = fc.array(piece, { maxLength: 14 }).map((parts) => parts.join(''));
/** Parameters, some broken the way an attacker breaks them (an open quote, an escaped close). */
const pairs = fc
  .array(
    fc.tuple(
      fc.constantFrom('for', 'For', 'x', 'proto', 'by', ''),
      fc.constantFrom('=', '= ', ''),
      fc.constantFrom(
        '198.51.100.1',
        '10.1.2.9',
        '"198.51.100.1:80"',
        '"[2001:db8::1]"',
        '"',
        '"a\\"',
        '"x',
        '_hidden',
        '',
      ),
      fc.constantFrom(';', ',', ', ', ' ;', '', '\\'),
    ),
    { maxLength: 4 },
  )
  .map((list) => list.map((parts) => parts.join('')).join(''));
/** Forwarded elements as proxies write them. */
const elementLike = fc
  .array(
    fc.constantFrom(
      'for=198.51.100.1',
      'for="[2001:db8::1]:443";proto=https',
      'for=10.0.0.1',
      'For="_hidden"',
      'for=127.0.0.1;by=_x',
      ' for="198.51.100.3:_p" ',
      'for=unknown',
      'proto=http',
    ),
    { minLength: 1, maxLength: 3 },
  )
  .map((elements) => elements.join(', '));
/** A well-formed value broken in one place, the way the review broke it, then maybe more. */
const attack = fc
  .tuple(
    elementLike,
    fc.constantFrom(
      ';x="',
      ';x="a\\"',
      ';x="\\',
      ';for=198.51.100.9',
      ';FOR="[2001:db8::9]"',
      '"',
      '\\',
      ' x',
      '=',
      ';x=""x',
      ':80',
      ',"',
      ';x="\r\n ',
      ';x="\u0001"',
    ),
    fc.option(elementLike, { nil: undefined }),
  )
  .map(([valid, defect, more]) => `${valid}${defect}${more === undefined ? '' : `, ${more}`}`);
const nasty = fc.oneof(pieces, pairs, attack);
/** A client's own header line: mostly one broken on purpose. */
const clientLine = fc.oneof({ arbitrary: attack, weight: 3 }, { arbitrary: nasty, weight: 2 });
/** One address as proxies write it, give or take whitespace and a port. */
const hopLike = fc
  .tuple(
    fc.constantFrom('', ' ', '\t', '\u00a0'),
    fc.constantFrom(
      '198.51.100.1',
      '198.51.100.1:80',
      '2001:db8::1',
      '[2001:db8::1]:443',
      '[2001:db8::1]',
      'fe80::1%eth0',
      '[fe80::1%eth0]',
      '::ffff:198.51.100.2',
      '010.0.0.1',
    ),
    fc.constantFrom('', ' ', '\t'),
  )
  .map((parts) => parts.join(''));

const untrustedClient = fc
  .oneof({ arbitrary: fc.ipV4(), weight: 3 }, fc.ipV6())
  .filter((ip) => canonicalIp(ip) !== undefined && !isTrusted(ip));
const trustedProxy = fc.constantFrom('127.0.0.1', '10.0.0.1', '10.2.3.4', '::1');
const port = fc.integer({ min: 1, max: 65535 });

/** How a proxy writes the address it saw into `Forwarded`: token or quoted, port or none, with other parameters around it. */
function forwardedElement(address: string): fc.Arbitrary<string> {
  const v6 = isIPv6(address);
  const node = v6
    ? fc.oneof(
        fc.constant(`"[${address}]"`),
        port.map((p) => `"[${address}]:${p}"`),
      )
    : fc.oneof(
        fc.constant(address),
        fc.constant(`"${address}"`),
        port.map((p) => `"${address}:${p}"`),
      );
  const full = fc
    .tuple(
      node,
      fc.subarray(['proto=https', 'host="example.com"']),
      fc.option(fc.constantFrom('by="_lb1"', 'by=10.0.0.9', 'BY="[2001:db8::9]:80"'), {
        nil: undefined,
      }),
      fc.boolean(),
    )
    .map(([forNode, others, by, forFirst]) => {
      const rest = by === undefined ? others : [...others, by];
      const pairs = forFirst ? [`for=${forNode}`, ...rest] : [...rest, `for=${forNode}`];
      return pairs.join(';');
    });
  // Mostly what nginx is told to write (`for=$remote_addr`): a bare token, no quotes to close.
  return v6 ? full : fc.oneof({ arbitrary: fc.constant(`for=${address}`), weight: 3 }, full);
}

function xffHop(address: string): fc.Arbitrary<string> {
  return isIPv6(address)
    ? fc.oneof(
        fc.constant(address),
        fc.constant(`[${address}]`),
        port.map((p) => `[${address}]:${p}`),
      )
    : fc.oneof(
        fc.constant(address),
        port.map((p) => `${address}:${p}`),
      );
}

/** Header lines as Node hands them over: several lines of one name joined with `, `. */
const joined = (lines: readonly string[]) => lines.join(', ');

/**
 * A request as the app sees it: the client's own header lines, then each trusted proxy in turn
 * appending what it saw, on the last line or on a line of its own.
 */
function proxiedRequest(header: 'x-forwarded-for' | 'forwarded', clients = untrustedClient) {
  return fc
    .tuple(
      clients,
      fc.array(trustedProxy, { minLength: 1, maxLength: 3 }),
      fc.array(clientLine, { maxLength: 3 }),
    )
    .chain(([client, proxies, clientLines]) => {
      const seen = [client, ...proxies.slice(0, -1)]; // what each proxy saw as its peer
      const written = seen.map((address) =>
        header === 'forwarded' ? forwardedElement(address) : xffHop(address),
      );
      return fc
        .tuple(
          fc.tuple(...written),
          fc.array(fc.boolean(), { minLength: seen.length, maxLength: seen.length }),
        )
        .map(([elements, ownLine]) => {
          const lines = [...clientLines];
          elements.forEach((element, i) => {
            if (ownLine[i] || lines.length === 0) lines.push(element);
            else lines[lines.length - 1] = `${lines[lines.length - 1]}, ${element}`;
          });
          return { client, proxies, clientLines, value: joined(lines) };
        });
    });
}

// ---- the properties --------------------------------------------------------------------------

describe('client IP header parsers, fuzzed', () => {
  const options = { numRuns: RUNS };

  it.each(['forwarded', 'x-forwarded-for'] as const)(
    '%s: the resolved client is the right-most untrusted hop the trusted proxies wrote, or no one',
    (header) => {
      for (const trustedHops of [undefined, 3]) {
        const resolve = createClientIpResolver({
          trustedProxies: TRUSTED,
          header,
          ...(trustedHops !== undefined && { trustedHops }),
        });
        fc.assert(
          fc.property(proxiedRequest(header), ({ client, proxies, clientLines, value }) => {
            const peer = proxies[proxies.length - 1]!;
            const expected = groupIp(canonicalIp(client)!, 64);
            const resolved = resolve(peer, value);
            if (resolved === expected) return;
            // No one (400) only when the client's own lines are not a valid Forwarded value.
            expect(resolved).toBeUndefined();
            expect(header).toBe('forwarded');
            expect(referenceForwarded(joined(clientLines))).toBeUndefined();
          }),
          options,
        );
      }
    },
  );

  it.each(['forwarded', 'x-forwarded-for'] as const)(
    '%s: with trustedHops, a client with a trusted address forges no hops',
    (header) => {
      // A VPN or VPC peer: its address is in a trusted range, and it writes whatever it likes.
      const vpnClient = fc.constantFrom('10.8.0.5', '10.1.2.9', '127.0.0.2');
      const forged = header === 'forwarded' ? 'for=198.51.100.99' : '198.51.100.99';
      fc.assert(
        fc.property(
          proxiedRequest(header, vpnClient),
          fc.boolean(),
          ({ client, proxies, clientLines, value }, forge) => {
            const resolve = createClientIpResolver({
              trustedProxies: TRUSTED,
              header,
              trustedHops: proxies.length,
            });
            const sent = forge ? `${forged}, ${value}` : value;
            const resolved = resolve(proxies[proxies.length - 1], sent);
            if (resolved === client) return;
            expect(resolved).toBeUndefined();
            expect(header).toBe('forwarded');
            expect(referenceForwarded(joined(clientLines))).toBeUndefined();
          },
        ),
        options,
      );
    },
  );

  it.each(['cf-connecting-ip', 'true-client-ip', 'fly-client-ip', 'x-real-ip'] as const)(
    '%s: the proxy’s address, or no one when the client sent a line of its own',
    (header) => {
      const resolve = createClientIpResolver({ trustedProxies: TRUSTED, header });
      fc.assert(
        fc.property(
          untrustedClient,
          trustedProxy,
          fc.option(nasty, { nil: undefined }),
          fc.boolean(),
          (client, proxy, sent, replaced) => {
            const expected = groupIp(canonicalIp(client)!, 64);
            const value = replaced || sent === undefined ? client : joined([sent, client]);
            const resolved = resolve(proxy, value);
            if (replaced || sent === undefined) expect(resolved).toBe(expected);
            else expect([expected, undefined]).toContain(resolved);
          },
        ),
        options,
      );
    },
  );

  it.each(['forwarded', 'x-forwarded-for', 'x-real-ip'] as const)(
    '%s: the library reads any value exactly as the reference grammar does',
    (header) => {
      const peers = fc.constantFrom('127.0.0.1', '10.0.0.1', '198.51.100.200');
      let named = 0;
      for (const trustedHops of [undefined, 1, 2]) {
        if (trustedHops !== undefined && header === 'x-real-ip') continue;
        const resolve = createClientIpResolver({
          trustedProxies: TRUSTED,
          header,
          ...(trustedHops !== undefined && { trustedHops }),
        });
        fc.assert(
          fc.property(
            peers,
            fc.array(fc.oneof(nasty, hopLike, elementLike), { minLength: 1, maxLength: 3 }),
            (peer, lines) => {
              const value = joined(lines);
              const expected = referenceResolve(header, peer, value, trustedHops);
              expect(resolve(peer, value)).toBe(expected);
              if (expected !== undefined && isTrusted(peer)) named++;
            },
          ),
          options,
        );
        // The generators reach past the parser often enough for the comparison to mean something.
        expect(named).toBeGreaterThan(RUNS / 50);
        named = 0;
      }
    },
  );

  it('the reference grammar itself: RFC 7239 examples parse, the review’s unclosed quote does not', () => {
    expect(referenceForwarded('for="_gazonk"')).toEqual(['_gazonk']);
    expect(referenceForwarded('For="[2001:db8:cafe::17]:4711"')).toEqual([
      '[2001:db8:cafe::17]:4711',
    ]);
    expect(referenceForwarded('for=192.0.2.60;proto=http;by=203.0.113.43')).toEqual(['192.0.2.60']);
    expect(referenceForwarded('for=192.0.2.43, for=198.51.100.17')).toEqual([
      '192.0.2.43',
      '198.51.100.17',
    ]);
    expect(referenceForwarded(' , for=192.0.2.43,, ;proto=http')).toEqual(['192.0.2.43', null]);
    expect(referenceForwarded('for=198.51.100.1;x=", for=203.0.113.7')).toBeUndefined();
    expect(referenceForwarded('for=198.51.100.1;for=203.0.113.7')).toBeUndefined();
    expect(referenceForwarded('for="a\\"b"')).toEqual(['a"b']);
    expect(referenceNode('[2001:db8::1]:_p')).toBe('2001:db8::1');
    expect(referenceNode('2001:db8::1')).toBeUndefined();
    expect(referenceHop(' [2001:db8::1]:443\t')).toBe('2001:db8::1');
    expect(referenceHop('198.51.100.1%eth0')).toBeUndefined();
  });
});
