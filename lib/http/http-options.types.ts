// The options of the framework-free request helpers (client IP, access lists, rate-limit headers);
// the module options (lib/config/redlimit-options.interface.ts) re-export them.

/**
 * Which rate-limit headers responses carry.
 *
 * - `'ietf'`: `RateLimit-Policy: "login";q=10;w=900` and `RateLimit: "login";r=3;t=412`
 *   (draft-ietf-httpapi-ratelimit-headers-09 and later)
 * - `'legacy'`: `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (seconds)
 * - `'both'`: all of the above
 * - `false`: none (a refusal still carries `Retry-After`)
 */
export type RateLimitHeaderStyle = 'ietf' | 'legacy' | 'both' | false;

/**
 * The request header a trusted proxy names the client in: `'x-forwarded-for'` (a chain, walked
 * from the right past trusted proxies), `'forwarded'` (RFC 7239 `for=`, walked the same way), or
 * the single-address headers of Cloudflare (`'cf-connecting-ip'`), Akamai and Cloudflare
 * Enterprise (`'true-client-ip'`), Fly.io (`'fly-client-ip'`) and nginx setups (`'x-real-ip'`).
 */
export type ClientIpHeader =
  | 'x-forwarded-for'
  | 'forwarded'
  | 'cf-connecting-ip'
  | 'true-client-ip'
  | 'fly-client-ip'
  | 'x-real-ip';

/**
 * How the client IP (the default tracker of `@Throttle` and the `'ip'` part of `@Attempt`) is
 * found.
 *
 * @example
 * RedlimitModule.forRoot({ clientIp: { trustedProxies: ['10.0.3.7', '10.0.3.8'], ipv6Subnet: 56 } });
 * RedlimitModule.forRoot({ clientIp: { trustedProxies: ['10.0.3.0/28'], trustedHops: 1 } });
 * RedlimitModule.forRoot({ clientIp: { trustedProxies: CLOUDFLARE_RANGES, header: 'cf-connecting-ip' } });
 */
export interface ClientIpOptions {
  /**
   * Proxies whose client-IP header is believed: addresses (`'10.0.0.7'`), CIDR ranges
   * (`'10.0.0.0/8'`, `'fd00::/8'`), the names `'loopback'`, `'private'` (RFC 1918 and `fc00::/7`)
   * and `'linklocal'`, and `'unix'` (the peer of a request that came over a Unix domain socket,
   * such as nginx's `proxy_pass http://unix:/run/app.sock`). The client is the right-most address
   * of the chain that is not a trusted proxy. Every address in these ranges is taken for a proxy:
   * trusting a whole private range lets any client that holds an address there (a VPN or a peered
   * VPC, another container) name its own address, unless `trustedHops` bounds the walk (a warning
   * says so at startup under `NODE_ENV=production`). Default: none — the peer address of the
   * connection is the client and `X-Forwarded-For` is ignored.
   */
  readonly trustedProxies?: readonly string[];
  /**
   * How many proxies are in front of the app, the one that connects to it included (as a number
   * in Express's `trust proxy`): the chain is walked from the right past at most this many hops,
   * and each of them must also be in `trustedProxies` (required with it); the walk stops earlier
   * at the first hop that is not. A client, whatever address it holds, then cannot make itself a
   * proxy by writing more hops. For `'x-forwarded-for'` and `'forwarded'` only. A whole number
   * ≥ 1; default: no bound.
   */
  readonly trustedHops?: number;
  /**
   * IPv6 clients are grouped by this prefix length, since one host usually holds a whole /64.
   * Default 64; 128 keeps single addresses. IPv4-mapped IPv6 addresses count as IPv4.
   */
  readonly ipv6Subnet?: number;
  /**
   * The header your proxy writes the client in; believed only from `trustedProxies` (required
   * when this is set). Other headers are ignored: a proxy passes on the headers it does not
   * write, so reading them would let clients choose their address. Default `'x-forwarded-for'`.
   */
  readonly header?: ClientIpHeader;
}

/**
 * Callers named by the module's `allow` or `deny` list. A request matches the list when any one
 * entry matches: its client IP (found by the `clientIp` rules, as for the limits; IPv6 compared
 * as the full address, not its /64 group) is in `ips`, its API key (the `apiKey.header` header,
 * default `x-api-key`) is one of `apiKeys`, or its `User-Agent` equals a string of `userAgents`
 * or passes a RegExp of it.
 *
 * @example
 * RedlimitModule.forRoot({
 *   allow: { ips: ['10.0.0.0/8', '2001:db8::/32', 'loopback'], apiKeys: [process.env.MONITOR_KEY!] },
 *   deny: { ips: ['203.0.113.7'], userAgents: [/^BadBot\//] },
 * });
 */
export interface AccessListOptions {
  /**
   * Addresses (`'203.0.113.7'`, `'2001:db8::1'`), CIDR ranges (`'10.0.0.0/8'`,
   * `'2001:db8::/32'`) and the names `'loopback'`, `'private'`, `'linklocal'`.
   */
  readonly ips?: readonly string[];
  /** API keys, compared in constant time (as SHA-256 digests); never logged. */
  readonly apiKeys?: readonly string[];
  /** `User-Agent` values: a string matches exactly (case-sensitive), a RegExp by `test()`. */
  readonly userAgents?: readonly (string | RegExp)[];
}
