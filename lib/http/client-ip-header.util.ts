/**
 * The parsers of the client-IP headers (`X-Forwarded-For`, RFC 7239 `Forwarded`, the
 * single-address headers) and the check for trusted proxy ranges anyone on a private network
 * holds. Internal: `client-ip.util` builds the resolver on them.
 */
import { isIP, isIPv4, isIPv6 } from 'node:net';
import { canonicalIp } from './ip-address.util';
import { NAMED_IP_RANGES } from './ip-range.util';

/**
 * The peer of a request that came over a Unix domain socket (which has no address), as
 * `clientIp.trustedProxies` names it.
 */
export const UNIX_SOCKET_PEER = 'unix';

/** An RFC 7239 obfuscated identifier (`_hidden`): a trusted proxy's stable name for a client. */
const OBFUSCATED = /^_[A-Za-z0-9._-]+$/;

/** Whether a resolved client is an obfuscated identifier rather than an address. */
export function isObfuscated(client: string): boolean {
  return OBFUSCATED.test(client);
}

/** Header lines as one value: Node joins several lines of a name with `, `. */
function oneValue(header: string | readonly string[]): string {
  return typeof header === 'string' ? header : header.join(', ');
}

/** `text` without leading and trailing OWS (spaces and tabs only: RFC 7230). */
function trimOws(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && (text[start] === ' ' || text[start] === '\t')) start++;
  while (end > start && (text[end - 1] === ' ' || text[end - 1] === '\t')) end--;
  return text.slice(start, end);
}

/**
 * The address in one `X-Forwarded-For` hop or single-address header value, canonical: IPv4
 * (optionally with a port), IPv6 (bare, or bracketed and optionally with a port), surrounded by
 * nothing but spaces and tabs; `undefined` when it is not one.
 */
export function hopAddress(hop: string): string | undefined {
  const text = trimOws(hop);
  const bracketed = /^\[([^\]]*)\](?::\d{1,5})?$/.exec(text);
  if (bracketed) {
    const inner = bracketed[1]!;
    return isIPv6(inner) && !inner.includes('%') ? canonicalIp(inner) : undefined;
  }
  const withPort = /^([\d.]+):\d{1,5}$/.exec(text);
  if (withPort) return isIPv4(withPort[1]!) ? withPort[1] : undefined;
  return isIP(text) === 0 ? undefined : canonicalIp(text);
}

/** The one address of a single-address header (`x-real-ip`, …); `undefined` for anything else. */
export function singleAddress(header: string | readonly string[]): string | undefined {
  return hopAddress(oneValue(header));
}

/**
 * The hops of an `X-Forwarded-For` value, left to right. Empty list elements are no hops (RFC
 * 7230 §7); every other element is kept as written, for {@link hopAddress} to judge when the walk
 * reaches it.
 */
export function forwardedForHops(header: string | readonly string[]): string[] {
  return oneValue(header)
    .split(',')
    .filter((hop) => trimOws(hop) !== '');
}

const TCHAR = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]$/;

/**
 * The elements of an RFC 7239 `Forwarded` value, left to right, each as its `for=` value
 * (unquoted) or `null` when it has none; `undefined` when the value does not parse:
 *
 * ```
 * Forwarded         = 1#forwarded-element          ; RFC 7230 list: empty elements skipped
 * forwarded-element = [ forwarded-pair ] *( ";" [ forwarded-pair ] )
 * forwarded-pair    = token "=" ( token / quoted-string )
 * ```
 *
 * with OWS around `,` (RFC 7230) and, leniently, around `;`. A parameter repeated within an
 * element (names compare case-insensitively), an unclosed quoted string, a backslash or any other
 * character outside the grammar makes the whole value unreadable: part of it was written by the
 * client, and which part cannot be known.
 */
export function forwardedElements(
  header: string | readonly string[],
): Array<string | null> | undefined {
  const text = oneValue(header);
  const n = text.length;
  let i = 0;
  const skipOws = () => {
    while (i < n && (text[i] === ' ' || text[i] === '\t')) i++;
  };
  const token = (): string | undefined => {
    const start = i;
    while (i < n && TCHAR.test(text[i]!)) i++;
    return i > start ? text.slice(start, i) : undefined;
  };
  const quoted = (): string | undefined => {
    let value = '';
    for (i++; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return value;
      }
      if (c === 0x5c) {
        const next = text.charCodeAt(++i);
        // quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )
        if (!(next === 0x09 || (next >= 0x20 && next <= 0xff && next !== 0x7f))) return undefined;
        value += text[i];
      } else if (
        c === 0x09 ||
        c === 0x20 ||
        c === 0x21 ||
        (c >= 0x23 && c <= 0x5b) ||
        (c >= 0x5d && c <= 0x7e) ||
        (c >= 0x80 && c <= 0xff)
      ) {
        value += text[i];
      } else return undefined;
    }
    return undefined; // unclosed
  };
  const elements: Array<string | null> = [];
  for (;;) {
    skipOws();
    if (i >= n) return elements;
    if (text[i] === ',') {
      i++; // an empty list element
      continue;
    }
    const names = new Set<string>();
    let forValue: string | null = null;
    for (;;) {
      skipOws();
      if (i >= n || text[i] === ',') break;
      if (text[i] === ';') {
        i++; // an empty pair
        continue;
      }
      const name = token();
      if (name === undefined || text[i] !== '=') return undefined;
      i++;
      const value = text[i] === '"' ? quoted() : token();
      if (value === undefined) return undefined;
      const lower = name.toLowerCase();
      if (names.has(lower)) return undefined;
      names.add(lower);
      if (lower === 'for') forValue = value;
      skipOws();
      if (i < n && text[i] !== ';' && text[i] !== ',') return undefined;
      if (text[i] === ';') i++;
    }
    elements.push(forValue);
    if (i < n) i++; // the ','
  }
}

/**
 * The client in an RFC 7239 `node` (`for=` value): the canonical address of an IPv4 or a
 * bracketed IPv6 nodename, or an obfuscated identifier as it is, either with an optional port
 * (digits or obfuscated); `undefined` for `unknown` and anything that is not a node.
 */
export function forwardedNode(node: string): string | undefined {
  const match =
    /^(?:([\d.]+)|\[([0-9A-Fa-f:.]+)\]|(_[A-Za-z0-9._-]+))(?::(?:\d{1,5}|_[A-Za-z0-9._-]+))?$/.exec(
      node,
    );
  if (!match) return undefined;
  if (match[3] !== undefined) return match[3];
  if (match[1] !== undefined) return isIPv4(match[1]) ? match[1] : undefined;
  return isIPv6(match[2]!) ? canonicalIp(match[2]) : undefined;
}

/** Private ranges a whole network of clients may hold addresses in (VPNs, VPCs, pods). */
const PRIVATE_BLOCKS: ReadonlyArray<readonly [string, number]> = [
  ['10.0.0.0', 8],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['fd00::', 8],
];

/**
 * The first `trustedProxies` entry that trusts a whole private range (`'private'`,
 * `'10.0.0.0/8'`, `'fd00::/8'`, or a wider range holding one), and that range; `undefined` for
 * none. The entries have been validated already.
 */
export function wholePrivateRangeEntry(
  entries: readonly string[],
): { readonly entry: string; readonly range: string } | undefined {
  for (const entry of entries) {
    if (typeof entry !== 'string' || entry === UNIX_SOCKET_PEER) continue;
    for (const range of NAMED_IP_RANGES[entry] ?? [entry]) {
      const text = range.trim();
      const slash = text.indexOf('/');
      const address = slash < 0 ? text : text.slice(0, slash);
      const canonical = canonicalIp(address);
      if (canonical === undefined) continue;
      const v4 = isIPv4(canonical);
      const mapped = v4 && isIPv6(address.replace(/^\[|\]$/g, ''));
      const prefix =
        slash < 0 ? (v4 ? 32 : 128) : Number(text.slice(slash + 1)) - (mapped ? 96 : 0);
      for (const [network, bits] of PRIVATE_BLOCKS) {
        if (isIPv4(network) !== v4 || prefix > bits) continue;
        if (sameNetwork(canonical, canonicalIp(network)!, prefix)) {
          return { entry, range: `${network}/${bits}` };
        }
      }
    }
  }
  return undefined;
}

/** Whether two canonical addresses of one family share their first `prefix` bits. */
function sameNetwork(a: string, b: string, prefix: number): boolean {
  const bits = (address: string) =>
    isIPv4(address)
      ? address
          .split('.')
          .map((part) => Number(part).toString(2).padStart(8, '0'))
          .join('')
      : address
          .split(':')
          .map((group) => parseInt(group, 16).toString(2).padStart(16, '0'))
          .join('');
  return bits(a).slice(0, prefix) === bits(b).slice(0, prefix);
}
