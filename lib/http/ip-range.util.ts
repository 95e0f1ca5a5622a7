import { BlockList, isIP, isIPv4 } from 'node:net';
import { canonicalIp } from './ip-address.util';

/**
 * The names an address list accepts besides addresses and CIDR ranges (`clientIp.trustedProxies`,
 * `allow.ips`, `deny.ips`), and the ranges behind them.
 *
 * @example
 * NAMED_IP_RANGES.private; // ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7']
 */
export const NAMED_IP_RANGES: Readonly<Record<string, readonly string[]>> = Object.freeze({
  loopback: ['127.0.0.0/8', '::1/128'],
  private: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
});

/**
 * A `node:net` `BlockList` of addresses (`'203.0.113.7'`, `'2001:db8::1'`), CIDR ranges
 * (`'10.0.0.0/8'`, `'2001:db8::/32'`, `'::ffff:10.0.0.0/104'` as `10.0.0.0/8`) and the names of
 * {@link NAMED_IP_RANGES}; `undefined` for an empty list. `option` names the list in errors, and
 * `otherNames` the names the caller accepts besides (shown in the error; not in `entries`).
 *
 * @throws TypeError naming the option when `entries` is not an array, or naming the first entry
 *   that is not an address, a range (prefix length a whole number within the family's bits) or a
 *   known name
 * @example
 * const list = ipRangeList(['10.0.0.0/8', 'loopback'], 'allow.ips');
 * inIpRangeList(list!, '10.1.2.3'); // true
 */
export function ipRangeList(
  entries: readonly string[],
  option: string,
  otherNames: readonly string[] = [],
): BlockList | undefined {
  const given: unknown = entries; // narrowing the typed parameter would widen it to any[]
  if (!Array.isArray(given)) {
    throw new TypeError(`${option} must be an array of addresses, ranges or names`);
  }
  if (entries.length === 0) return undefined;
  const list = new BlockList();
  for (const entry of entries) {
    const named = typeof entry === 'string' ? NAMED_IP_RANGES[entry] : undefined;
    for (const range of named ?? [entry]) addRange(list, range, entry, option, otherNames);
  }
  return list;
}

/**
 * Whether an address in canonical form (see `canonicalIp`: IPv4-mapped IPv6 as IPv4) is in a list
 * built by {@link ipRangeList}.
 *
 * @example
 * inIpRangeList(list, canonicalIp('::ffff:10.0.0.1')!); // true for a list holding 10.0.0.0/8
 */
export function inIpRangeList(list: BlockList, address: string): boolean {
  return list.check(address, isIPv4(address) ? 'ipv4' : 'ipv6');
}

function addRange(
  list: BlockList,
  range: unknown,
  entry: unknown,
  option: string,
  otherNames: readonly string[],
): void {
  const text = typeof range === 'string' ? range.trim() : '';
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  const bits = slash < 0 ? undefined : text.slice(slash + 1);
  const canonical = canonicalIp(address);
  const family = canonical === undefined ? 0 : isIP(canonical);
  // '::ffff:10.0.0.0/104' is the IPv4 range 10.0.0.0/8: canonicalIp gives the IPv4 address.
  const mapped = family === 4 && isIP(address.replace(/^\[|\]$/g, '')) === 6;
  const max = family === 4 ? 32 : 128;
  let prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN;
  if (mapped && bits !== undefined) prefix -= 96;
  if (canonical === undefined || !Number.isInteger(prefix) || prefix < 0 || prefix > max) {
    throw new TypeError(
      `${option}: '${String(entry)}' is not an IP address, a CIDR range ` +
        `or one of ${[...Object.keys(NAMED_IP_RANGES), ...otherNames].join(', ')}`,
    );
  }
  list.addSubnet(canonical, prefix, family === 4 ? 'ipv4' : 'ipv6');
}
