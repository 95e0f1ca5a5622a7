import { Inject, Injectable } from '@nestjs/common';
import { Deadlines } from '../../core/deadlines';
import { parseDuration } from '../../core/duration.util';
import type { Limiter } from '../../core/limiter';
import { checkOptions } from '../../core/options.util';
import type { EpochReading } from '../../core/store';
import {
  DEVICE_EPOCH_KEEP_MS,
  deviceEpochKey,
  deviceCookieName,
  deviceKey,
  type DeviceTokenBinding,
  deviceTokenShaped,
  type DeviceTokenFields,
  deviceTokenLive,
  newDeviceNonce,
  readDeviceToken,
  signDeviceToken,
} from '../../http/device-token.util';
import type { HttpRequestLike, HttpResponseLike } from '../../http/http-request.util';
import { appendSetCookie, cookieValues } from '../../http/cookie.util';
import { MISSING_VALUE } from '../../http/key-hash.util';
import { LimiterRegistry } from '../registry/limiter.registry';
import { REDLIMIT_OPTIONS } from '../module/redlimit.constants';
import { DEFAULT_PREFIX, RedlimitConnection } from '../module/redlimit-connection.service';
import { RedlimitHttp } from '../contexts/redlimit-http.service';
import type {
  DevicesOptions,
  RedlimitModuleOptions,
} from '../../config/redlimit-options.interface';

const DAY_MS = 86_400_000;
const DEFAULT_LIFETIME_MS = 30 * DAY_MS;
const MIN_LIFETIME_MS = 60_000;
const MAX_LIFETIME_MS = DEVICE_EPOCH_KEEP_MS;
/** A device's failures per lifetime sit in a sliding log: one entry each, so keep it modest. */
const MAX_FAILURES = 10_000;
const DEVICES_FIELDS: readonly string[] = ['secret', 'ttl', 'maxFailures', 'cookie', 'header'];
/**
 * Well-formed tokens whose MAC is checked per request (about 2 µs each). More than fit in Node's
 * default 16 KiB of request headers, so cookies planted beside the owner's (a sibling subdomain
 * sets them for a longer Path, and the browser sends them first) cannot push the owner's out.
 */
const MAX_CANDIDATES = 256;
const COOKIE_FIELDS: readonly string[] = ['name', 'path', 'domain', 'secure', 'sameSite'];
/** RFC 6265 cookie-name (an RFC 7230 token) and the characters a path or domain may not hold. */
const TOKEN_CHARS = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;
const ATTRIBUTE_VALUE = /^[\x21-\x3a\x3c-\x7e]+$/; // printable ASCII but ';' and space

/** The cookie the token travels in, resolved. */
interface CookieSettings {
  readonly name: string;
  readonly attributes: string;
}

/** A token the request carries that is signed for the login: the device it names. */
export interface TrustedDevice extends DeviceTokenFields {
  /** The caller key the device is charged under, `device:<hash>`. */
  readonly key: string;
}

/** Options of {@link RedlimitDevices.trust} and {@link RedlimitDevices.revokeAll}. */
export interface DeviceLoginOptions {
  /**
   * Normalise the login as `@Attempt` does by default (`true`); `false` for a part declared with
   * `normalize: false`.
   */
  readonly normalize?: boolean;
  /**
   * {@link RedlimitDevices.trust}: the sign-in policy the device is trusted for (tokens bind it).
   * Default: the policy of the app's `@Attempt(…, { devices })` routes, when they all have one.
   */
  readonly policy?: string;
}

/**
 * Trusted devices (OWASP "device cookies"), the module's `devices` option: a sign-in that
 * succeeds from a browser or client gets a device token, and later attempts that carry it for the
 * same login are charged to that device's own budget instead of the account's, so nobody can keep
 * the owner out by failing on purpose. `@Attempt(parts, { devices: true })` does it on a route;
 * this service trusts a device from other flows (password reset, magic link) and revokes every
 * device of a login (password change, "sign out everywhere"). Tokens bind the normalised login
 * (as `@Attempt` keys hash it), expire on the store's clock and are revoked through a per-login
 * epoch in the store.
 *
 * @example
 * ```ts
 * constructor(private readonly devices: RedlimitDevices) {}
 *
 * async changePassword(email: string) {
 *   // …
 *   await this.devices.revokeAll(email); // every device of this login is untrusted again
 * }
 * ```
 */
@Injectable()
export class RedlimitDevices {
  /** Whether the module's `devices` option is set. */
  readonly enabled: boolean;
  /** How long a token is valid, in ms (the `ttl` option). */
  readonly ttlMs: number;
  private readonly secret: string;
  private readonly prefix: string;
  private readonly maxFailures: number | undefined;
  private readonly cookie: CookieSettings | undefined;
  private readonly header: string | undefined;
  private readonly lifeLimiters = new Map<string, Limiter>();
  /** The policies of the app's `@Attempt(…, { devices })` routes, as found at startup. */
  private readonly routePolicies = new Set<string>();
  /** Bounds the epoch reads by the module's `timeoutMs`. */
  private readonly deadlines: Deadlines;

  constructor(
    @Inject(REDLIMIT_OPTIONS) options: RedlimitModuleOptions,
    private readonly connection: RedlimitConnection,
    private readonly registry: LimiterRegistry,
    private readonly http: RedlimitHttp,
  ) {
    const devices: DevicesOptions | undefined = options.devices;
    this.enabled = devices !== undefined;
    this.prefix = options.prefix ?? DEFAULT_PREFIX;
    this.secret = '';
    this.ttlMs = DEFAULT_LIFETIME_MS;
    this.deadlines = new Deadlines(options.timeoutMs ?? 1000);
    if (devices === undefined) return;
    checkOptions(devices, DEVICES_FIELDS, 'RedlimitModule devices');
    const secret: unknown = devices.secret ?? options.keySecret;
    if (typeof secret !== 'string' || secret.length < 16) {
      throw new TypeError(
        'RedlimitModule devices needs a secret of at least 16 characters to sign device tokens: ' +
          'set devices.secret or keySecret' +
          (devices.secret !== undefined ? ' (devices.secret is too short or not a string)' : ''),
      );
    }
    this.secret = secret;
    if (devices.ttl !== undefined) {
      const ms = parseDuration(devices.ttl, 'devices.ttl');
      if (ms < MIN_LIFETIME_MS || ms > MAX_LIFETIME_MS) {
        throw new RangeError(
          `RedlimitModule devices.ttl must be from 1 minute to 366 days; got ${ms} ms`,
        );
      }
      this.ttlMs = ms;
    }
    const { maxFailures } = devices;
    if (
      maxFailures !== undefined &&
      (!Number.isInteger(maxFailures) || maxFailures < 1 || maxFailures > MAX_FAILURES)
    ) {
      throw new RangeError(
        `RedlimitModule devices.maxFailures must be a whole number from 1 to ${MAX_FAILURES}; ` +
          `got ${JSON.stringify(maxFailures)}`,
      );
    }
    this.maxFailures = maxFailures;
    this.cookie = cookieSettings(devices.cookie, this.ttlMs);
    const header = devices.header ?? 'redlimit-device';
    if (header !== false && (typeof header !== 'string' || !TOKEN_CHARS.test(header))) {
      throw new TypeError(
        `RedlimitModule devices.header must be an HTTP header name or false; got ${JSON.stringify(header)}`,
      );
    }
    this.header = header === false ? undefined : header.toLowerCase();
    if (this.cookie === undefined && this.header === undefined) {
      throw new TypeError(
        'RedlimitModule devices: cookie and header are both false, so no token could ever be presented',
      );
    }
  }

  /**
   * Trusts the client as a device of `login` outside a sign-in attempt, e.g. at the end of a
   * password reset or a magic-link sign-in (an owner locked out by an attack has no token yet):
   * issues a device token and, given the HTTP response, sets it as the device cookie. `login` is
   * the value the sign-in's login part reads (an email), normalised as `@Attempt` does unless
   * `normalize: false`.
   *
   * @returns the token (API clients keep it and send it in the `devices.header` header)
   * @throws Error when the module has no `devices` option, or the store fails; TypeError for an
   *   empty login
   */
  async trust(
    response: HttpResponseLike | undefined,
    login: string,
    options: DeviceLoginOptions = {},
  ): Promise<string> {
    const loginKey = this.loginOf(login, options, 'trust', ['normalize', 'policy']);
    const policy = this.trustPolicy(options.policy);
    const token = this.tokenFor(loginKey, policy, undefined, await this.epochOf(loginKey));
    if (response !== undefined) this.setCookie(response, token, policy, loginKey);
    return token;
  }

  /**
   * Revokes every device token of a login at once (password change, "sign out everywhere"): its
   * device epoch in the store goes up, and tokens issued before count as no token.
   *
   * @throws Error when the module has no `devices` option or the store fails
   */
  async revokeAll(login: string, options: DeviceLoginOptions = {}): Promise<void> {
    const loginKey = this.loginOf(login, options, 'revokeAll', ['normalize']);
    const store = this.connection.store;
    if (typeof store.bumpEpoch !== 'function') {
      throw new Error(
        'redlimit devices: the module store has no bumpEpoch(); tokens cannot be revoked',
      );
    }
    // Kept as long as any token can live (not this app's ttl, which may grow later).
    await store.bumpEpoch(deviceEpochKey(loginKey), DEVICE_EPOCH_KEEP_MS);
  }

  /**
   * The device a request's token names for a login, when one of the tokens it carries (the
   * `devices.header` header and every cookie of the device cookie's name; the MAC of at most 256
   * well-formed ones checked) is signed for that login: of several, the newest (highest epoch,
   * then latest expiry). Its expiry and epoch are still to be checked against the store
   * ({@link live}). `partKey` is the login part's caller key (`email:<hash>`); a missing login
   * (`email:-`) has no devices.
   *
   * @internal
   */
  recognise(
    request: HttpRequestLike | undefined,
    partKey: string,
    policy: string,
  ): TrustedDevice | undefined {
    if (request === undefined || partKey.endsWith(`:${MISSING_VALUE}`)) return undefined;
    const binding = this.binding(loginOfKey(partKey), policy);
    // The newest signed token: a revoked one (lower epoch) or an older one of the same device
    // (earlier expiry) sent first would otherwise stand in for the owner's live one.
    let newest: DeviceTokenFields | undefined;
    for (const token of this.candidates(request, binding)) {
      const fields = readDeviceToken(token, binding);
      if (
        fields !== undefined &&
        (newest === undefined ||
          fields.epoch > newest.epoch ||
          (fields.epoch === newest.epoch && fields.expiresAt > newest.expiresAt))
      ) {
        newest = fields;
      }
    }
    return newest && { ...newest, key: deviceKey(binding, newest.nonce) };
  }

  /**
   * Whether a recognised device is trusted now: unexpired on the store's clock, at the login's
   * current epoch.
   *
   * @internal
   */
  live(device: TrustedDevice, reading: EpochReading): boolean {
    return device.epoch === reading.epoch && deviceTokenLive(device, reading.now, this.ttlMs);
  }

  /**
   * Whether a recognised device is unexpired on this process's clock: the check while the store
   * is down and a fail mode decides (the epoch cannot be read; revocations go unseen until the
   * store is back).
   *
   * @internal
   */
  liveNow(device: TrustedDevice): boolean {
    return deviceTokenLive(device, Date.now(), this.ttlMs);
  }

  /**
   * The login's device epoch (0 when never revoked) and the store's clock, keeping the epoch
   * stored for another `ttl`; rejects when the store fails or does not answer within the
   * module's `timeoutMs`.
   *
   * @internal
   */
  async epochOf(loginKey: string): Promise<EpochReading> {
    const store = this.connection.store;
    if (typeof store.readEpoch !== 'function') {
      throw new Error('redlimit devices: the module store has no readEpoch()');
    }
    return this.deadlines.race(store.readEpoch(deviceEpochKey(loginKey), this.ttlMs));
  }

  /**
   * A token for the login: for the device `nonce` (a renewal) or a new device, at the epoch read,
   * valid for `ttl` from the store's clock at that reading.
   *
   * @internal
   */
  tokenFor(
    loginKey: string,
    policy: string,
    nonce: string | undefined,
    reading: EpochReading,
  ): string {
    return signDeviceToken({
      ...this.binding(loginKey, policy),
      nonce: nonce ?? newDeviceNonce(),
      epoch: reading.epoch,
      expiresAt: Math.floor((reading.now + this.ttlMs) / 1000),
    });
  }

  /** The login a part key names: its hash, whatever the part is called. @internal */
  loginKeyOf(partKey: string): string {
    return loginOfKey(partKey);
  }

  /**
   * Sets the device cookie on an Express, Fastify or Node response (added to any other
   * `Set-Cookie`); nothing when `cookie` is false.
   *
   * @internal
   */
  setCookie(response: HttpResponseLike, token: string, policy: string, loginKey: string): void {
    if (this.cookie === undefined) return;
    const name = deviceCookieName(this.cookie.name, this.binding(loginKey, policy));
    appendSetCookie(response, `${name}=${token}${this.cookie.attributes}`);
  }

  /**
   * Notes the policy of an `@Attempt(…, { devices })` route found at startup: {@link trust}
   * defaults to it when the app has one.
   *
   * @internal
   */
  notePolicy(policy: string): void {
    this.routePolicies.add(policy);
  }

  /**
   * The limiter counting a device's failures over a token's lifetime for `policy`: `<name>.devices`,
   * a sliding log of `maxFailures` (default 10 × the policy's smallest limit) per lifetime.
   *
   * @internal
   */
  lifeLimiter(policy: Limiter): Limiter {
    const name = `${policy.policy.name}.devices`;
    let limiter = this.lifeLimiters.get(name);
    if (limiter === undefined) {
      const smallest = Math.min(...policy.policy.limits.map((rule) => rule.limit));
      limiter = this.registry.register({
        name,
        algorithm: 'sliding-log',
        limit: this.maxFailures ?? Math.min(10 * smallest, MAX_FAILURES),
        window: this.ttlMs,
        ...(policy.policy.failMode !== undefined && { failMode: policy.policy.failMode }),
        ...(policy.policy.shadow !== undefined && { shadow: policy.policy.shadow }),
      });
      this.lifeLimiters.set(name, limiter);
    }
    return limiter;
  }

  private binding(loginKey: string, policy: string): DeviceTokenBinding {
    return { secret: this.secret, prefix: this.prefix, policy, loginKey };
  }

  /** The policy {@link trust} trusts a device for: given, or the one of the app's routes. */
  private trustPolicy(policy: string | undefined): string {
    if (policy !== undefined) {
      if (typeof policy !== 'string' || policy === '') {
        throw new TypeError('RedlimitDevices.trust(): options.policy must be a policy name');
      }
      return policy;
    }
    if (this.routePolicies.size === 1) return [...this.routePolicies][0]!;
    throw new Error(
      'RedlimitDevices.trust(): name the sign-in policy the device is trusted for ' +
        `({ policy: 'sign-in' }): the app's @Attempt(…, { devices }) routes have ` +
        (this.routePolicies.size === 0
          ? 'none found at startup (a policy resolver is only known per request)'
          : `several (${[...this.routePolicies].map((name) => `'${name}'`).join(', ')})`),
    );
  }

  /**
   * Header first, then every cookie of the name: the distinct well-formed tokens, at most
   * {@link MAX_CANDIDATES} (malformed values cost nothing and are not counted).
   */
  private candidates(request: HttpRequestLike, binding: DeviceTokenBinding): string[] {
    const headers = request.headers ?? {};
    const found: string[] = [];
    if (this.header !== undefined) {
      const value = headers[this.header];
      for (const line of Array.isArray(value) ? value : value === undefined ? [] : [value]) {
        if (line.trim() !== '') found.push(line.trim());
      }
    }
    if (this.cookie !== undefined) {
      found.push(...cookieValues(headers.cookie, deviceCookieName(this.cookie.name, binding)));
    }
    return [...new Set(found.filter(deviceTokenShaped))].slice(0, MAX_CANDIDATES);
  }

  private loginOf(
    login: string,
    options: DeviceLoginOptions,
    method: string,
    known: readonly string[],
  ): string {
    if (!this.enabled) {
      throw new Error(
        `RedlimitDevices.${method}(): set the devices option of RedlimitModule first`,
      );
    }
    if (typeof login !== 'string') {
      throw new TypeError(`RedlimitDevices.${method}(): login must be a string`);
    }
    checkOptions(options, known, `RedlimitDevices.${method}() options`);
    const key = this.http.attemptKey('login', login, { normalize: options.normalize ?? true });
    if (key.endsWith(`:${MISSING_VALUE}`)) {
      throw new TypeError(`RedlimitDevices.${method}(): login is empty`);
    }
    return loginOfKey(key);
  }
}

/** The login of a part key (`email:<hash>` → `<hash>`): the same login under any part name. */
function loginOfKey(partKey: string): string {
  return partKey.slice(partKey.indexOf(':') + 1);
}

function cookieSettings(
  cookie: DevicesOptions['cookie'],
  lifetimeMs: number,
): CookieSettings | undefined {
  if (cookie === false) return undefined;
  const given = cookie === undefined ? {} : cookie;
  checkOptions(given, COOKIE_FIELDS, 'RedlimitModule devices.cookie');
  const name = given.name ?? 'redlimit_device';
  if (typeof name !== 'string' || !TOKEN_CHARS.test(name)) {
    throw new TypeError(
      `RedlimitModule devices.cookie.name must be a cookie name; got ${JSON.stringify(name)}`,
    );
  }
  const path = given.path ?? '/';
  if (typeof path !== 'string' || !path.startsWith('/') || !ATTRIBUTE_VALUE.test(path)) {
    throw new TypeError(
      `RedlimitModule devices.cookie.path must start with '/' and hold no ';' or spaces; got ${JSON.stringify(path)}`,
    );
  }
  const { domain } = given;
  if (domain !== undefined && (typeof domain !== 'string' || !ATTRIBUTE_VALUE.test(domain))) {
    throw new TypeError(
      `RedlimitModule devices.cookie.domain must be a domain; got ${JSON.stringify(domain)}`,
    );
  }
  const secure = given.secure ?? true;
  if (typeof secure !== 'boolean') {
    throw new TypeError('RedlimitModule devices.cookie.secure must be true or false');
  }
  const sameSite = given.sameSite ?? 'Lax';
  if (sameSite !== 'Strict' && sameSite !== 'Lax' && sameSite !== 'None') {
    throw new TypeError(
      `RedlimitModule devices.cookie.sameSite must be 'Strict', 'Lax' or 'None'; got ${JSON.stringify(sameSite)}`,
    );
  }
  if (sameSite === 'None' && !secure) {
    throw new TypeError(
      'RedlimitModule devices.cookie: sameSite None needs secure (browsers drop it)',
    );
  }
  const attributes =
    `; Path=${path}` +
    (domain !== undefined ? `; Domain=${domain}` : '') +
    `; Max-Age=${Math.floor(lifetimeMs / 1000)}; HttpOnly` +
    (secure ? '; Secure' : '') +
    `; SameSite=${sameSite}`;
  return { name, attributes };
}
