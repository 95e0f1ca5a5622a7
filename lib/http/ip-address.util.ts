/** IP addresses as text: canonical form, IPv6 grouping. Re-exported by `client-ip.util`. */
import { isIP, isIPv4 } from 'node:net';

/**
 * An address in canonical form: brackets and zone removed, IPv4-mapped IPv6 as IPv4, IPv6
 * expanded to eight groups. `undefined` when it is not an IP address (an IPv4 part with a
 * leading zero is not).
 *
 * @example
 * canonicalIp('::ffff:203.0.113.9'); // '203.0.113.9'
 */
export function canonicalIp(address: string | undefined): string | undefined {
  if (typeof address !== 'string') return undefined;
  let text = address.trim();
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  text = stripZone(text);
  const family = isIP(text);
  if (family === 4) return text;
  if (family !== 6) return undefined;
  const groups = ipv6Groups(text);
  const mapped = groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff;
  if (mapped) {
    const [hi = 0, lo = 0] = groups.slice(6);
    return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join('.');
  }
  return groups.map((g) => g.toString(16)).join(':');
}

/**
 * An IPv6 address reduced to its `/subnet` network (`'2001:db8:0:0::/64'`); IPv4 unchanged.
 *
 * @example
 * groupIp('2001:db8::1', 64); // '2001:db8:0:0::/64'
 */
export function groupIp(address: string, subnet: number): string {
  if (isIPv4(address) || subnet >= 128) return address;
  const groups = ipv6Groups(address);
  const kept: string[] = [];
  for (let i = 0, bits = subnet; bits > 0; i++, bits -= 16) {
    const mask = bits >= 16 ? 0xffff : (0xffff << (16 - bits)) & 0xffff;
    kept.push(((groups[i] ?? 0) & mask).toString(16));
  }
  return `${kept.join(':')}${kept.length < 8 ? '::' : ''}/${subnet}`;
}

/** An address without its IPv6 zone (`fe80::1%eth0` → `fe80::1`). */
export function stripZone(text: string): string {
  const zone = text.indexOf('%');
  return zone >= 0 ? text.slice(0, zone) : text;
}

/** The eight 16-bit groups of a valid IPv6 address (with `::` and a trailing dotted quad). */
function ipv6Groups(address: string): number[] {
  let text = address;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1]) {
    const [a = 0, b = 0, c = 0, d = 0] = dotted[1].split('.').map(Number);
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const parse = (part: string): number[] =>
    part === '' ? [] : part.split(':').map((g) => parseInt(g, 16));
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  const zeros = new Array<number>(8 - left.length - right.length).fill(0);
  return [...left, ...zeros, ...right];
}
