import { Inject, Injectable } from '@nestjs/common';
import { parseDuration } from '../core/duration.util';
import type { Limiter } from '../core/limiter';
import { checkOptions } from '../core/options.util';
import {
  deviceKey,
  type DeviceTokenBinding,
  type DeviceTokenFields,
  newDeviceNonce,
  signDeviceToken,
  verifyDeviceToken,
} from './device-token.util';
import type { HttpRequestLike, HttpResponseLike } from './http-request.util';
import { MISSING_VALUE } from './key-hash.util';
import { LimiterRegistry } from './limiter.registry';
import { REDLIMIT_OPTIONS } from './redlimit.constants';
import { DEFAULT_PREFIX, RedlimitConnection } from './redlimit-connection.service';
import { RedlimitHttp } from './redlimit-http.service';
import type { DevicesOptions, RedlimitModuleOptions } from './redlimit-options.interface';

const DAY_MS = 86_400_000;
const DEFAULT_LIFETIME_MS = 30 * DAY_MS;
const MIN_LIFETIME_MS = 60_000;
const MAX_LIFETIME_MS = 366 * DAY_MS;
/** A device's failures per lifetime sit in a sliding log: one entry each, so keep it modest. */
const MAX_FAILURES = 10_000;
const DEVICES_FIELDS: readonly string[] = ['secret', 'lifetime', 'maxFailures', 'cookie', 'header'];
const COOKIE_FIELDS: readonly string[] = ['name', 'path', 'domain', 'secure', 'sameSite'];
/** RFC 6265 cookie-name (an RFC 7230 token) and the characters a path or domain may not hold. */
const TOKEN_CHARS = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;
const ATTRIBUTE_VALUE = /^[\x21-\x3a\x3c-\x7e]+$/; // printable ASCII but ';' and space

/** The cookie the token travels in, resolved. */
interface CookieSettings {
  readonly name: string;
  readonly attributes: string;
}

/** A token the request carries that is valid for the login: the device it names. */
export interface TrustedDevice extends DeviceTokenFields {
  /** The caller key the device is charged under, `device:<hash>`. */
  readonly key: string;
}

/** Options of {@link RedlimitDevices.issue} and {@link RedlimitDevices.revokeAll}. */
export interface DeviceLoginOptions {
  /**
   * Normalise the login as `@Attempt` does by default (`true`); `false` for a part declared with
   * `normalize: false`.
   */
  readonly normalize?: boolean;
}

/**
 * Trusted devices (OWASP "device cookies"), the module's `devices` option: a sign-in that
 * succeeds from a browser or client gets a device token, and later attempts that carry it for the
 * same login are charged to that device's own budget instead of the account's, so nobody can keep
 * the owner out by failing on purpose. `@Attempt(parts, { devices: 'body.email' })` does it on a
 * route; this service issues tokens from other flows (password reset, magic link) and revokes
 * them all (password change, "sign out everywhere").
 *
 * @example
 * ```ts
 * constructor(private readonly devices: RedlimitDevices) {}
 *
 * async changePassword(email: string) {
 *   // …
 *   await this.devices.revokeAll('email', email); // every device of this login is untrusted again
 * }
 * ```
 */
@Injectable()
export class RedlimitDevices {
  /** Whether the module's `devices` option is set. */
  readonly enabled: boolean;
  /** How long a token is valid, in ms. */
  readonly lifetimeMs: number;
  private readonly secret: string;
  private readonly prefix: string;
  private readonly maxFailures: number | undefined;
  private readonly cookie: CookieSettings | undefined;
  private readonly header: string | undefined;
  private readonly lifeLimiters = new Map<string, Limiter>();

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
    this.lifetimeMs = DEFAULT_LIFETIME_MS;
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
    if (devices.lifetime !== undefined) {
      const ms = parseDuration(devices.lifetime, 'devices.lifetime');
      if (ms < MIN_LIFETIME_MS || ms > MAX_LIFETIME_MS) {
        throw new RangeError(
          `RedlimitModule devices.lifetime must be from 1 minute to 366 days; got ${ms} ms`,
        );
      }
      this.lifetimeMs = ms;
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
    this.cookie = cookieSettings(devices.cookie, this.lifetimeMs);
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
   * Issues a device token for a login outside a sign-in, e.g. at the end of a password reset or a
   * magic-link sign-in (the owner locked out by an attack, with no token yet), and, given the
   * HTTP response, sets it as the device cookie. `part` is the login part's key name as
   * `@Attempt` names it: `'email'` for `'body.email'`.
   *
   * @returns the token (for API clients that keep it and send it in the `devices.header` header)
   * @throws Error when the module has no `devices` option; TypeError for an empty login
   */
  async issue(
    part: string,
    login: string,
    response?: HttpResponseLike,
    options: DeviceLoginOptions = {},
  ): Promise<string> {
    const loginKey = this.loginKey(part, login, options, 'issue');
    const token = await this.tokenFor(loginKey, undefined);
    if (response !== undefined) this.setCookie(response, token);
    return token;
  }

  /**
   * Revokes every device token of a login at once (password change, "sign out everywhere"): its
   * device epoch in the store goes up, and tokens issued before count as no token.
   *
   * @throws Error when the module has no `devices` option or the store cannot keep epochs
   */
  async revokeAll(part: string, login: string, options: DeviceLoginOptions = {}): Promise<void> {
    const loginKey = this.loginKey(part, login, options, 'revokeAll');
    const store = this.connection.store;
    if (typeof store.bumpEpoch !== 'function') {
      throw new Error(
        'redlimit devices: the module store has no bumpEpoch(); tokens cannot be revoked',
      );
    }
    await store.bumpEpoch(epochKey(loginKey), this.lifetimeMs);
  }

  /**
   * The token the request carries: the `devices.header` header, else the device cookie (the
   * first cookie of that name); `undefined` for none.
   *
   * @internal
   */
  presented(request: HttpRequestLike | undefined): string | undefined {
    if (request === undefined) return undefined;
    const headers = request.headers ?? {};
    if (this.header !== undefined) {
      const value = headers[this.header];
      const first = Array.isArray(value) ? value[0] : value;
      if (typeof first === 'string' && first !== '') return first.trim();
    }
    if (this.cookie !== undefined) return cookieValue(headers.cookie, this.cookie.name);
    return undefined;
  }

  /**
   * The device `token` names when it is valid for `loginKey` (signed with this secret for this
   * prefix and login, unexpired); its epoch is still to be checked against the store.
   *
   * @internal
   */
  recognise(loginKey: string, token: string | undefined): TrustedDevice | undefined {
    if (token === undefined || loginKey.endsWith(`:${MISSING_VALUE}`)) return undefined;
    const binding = this.binding(loginKey);
    const fields = verifyDeviceToken(token, {
      ...binding,
      now: Date.now(),
      maxLifetimeMs: this.lifetimeMs,
    });
    return fields && { ...fields, key: deviceKey(binding, fields.nonce) };
  }

  /**
   * The login's device epoch (0 when never revoked), keeping it stored for another lifetime.
   *
   * @internal
   */
  async epochOf(loginKey: string): Promise<number> {
    const store = this.connection.store;
    if (typeof store.readEpoch !== 'function') {
      throw new Error('redlimit devices: the module store has no readEpoch()');
    }
    return store.readEpoch(epochKey(loginKey), this.lifetimeMs);
  }

  /**
   * A token for the login: for the device `nonce` (a renewal) or a new device, at the login's
   * current epoch (read from the store unless `epoch` is given), valid for the lifetime from now.
   *
   * @internal
   */
  async tokenFor(loginKey: string, nonce: string | undefined, epoch?: number): Promise<string> {
    return signDeviceToken({
      ...this.binding(loginKey),
      nonce: nonce ?? newDeviceNonce(),
      epoch: epoch ?? (await this.epochOf(loginKey)),
      expiresAt: Math.floor((Date.now() + this.lifetimeMs) / 1000),
    });
  }

  /**
   * Sets the device cookie on an Express, Fastify or Node response (added to any other
   * `Set-Cookie`); nothing when `cookie` is false.
   *
   * @internal
   */
  setCookie(response: HttpResponseLike, token: string): void {
    if (this.cookie === undefined) return;
    appendSetCookie(response, `${this.cookie.name}=${token}${this.cookie.attributes}`);
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
        window: this.lifetimeMs,
        ...(policy.policy.failMode !== undefined && { failMode: policy.policy.failMode }),
        ...(policy.policy.shadow !== undefined && { shadow: policy.policy.shadow }),
      });
      this.lifeLimiters.set(name, limiter);
    }
    return limiter;
  }

  private binding(loginKey: string): DeviceTokenBinding {
    return { secret: this.secret, prefix: this.prefix, loginKey };
  }

  private loginKey(
    part: string,
    login: string,
    options: DeviceLoginOptions,
    method: string,
  ): string {
    if (!this.enabled) {
      throw new Error(
        `RedlimitDevices.${method}(): set the devices option of RedlimitModule first`,
      );
    }
    if (typeof part !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(part)) {
      throw new TypeError(
        `RedlimitDevices.${method}(): part must be a part's key name such as 'email'; got ${JSON.stringify(part)}`,
      );
    }
    if (typeof login !== 'string') {
      throw new TypeError(`RedlimitDevices.${method}(): login must be a string`);
    }
    checkOptions(options, ['normalize'], `RedlimitDevices.${method}() options`);
    const key = this.http.attemptKey(part, login, { normalize: options.normalize ?? true });
    if (key.endsWith(`:${MISSING_VALUE}`)) {
      throw new TypeError(`RedlimitDevices.${method}(): login is empty`);
    }
    return key;
  }
}

/** Where a login's device epoch is stored (under the store's prefix). */
function epochKey(loginKey: string): string {
  return `devices:${loginKey}`;
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

/** The first cookie named `name` in a `Cookie` header (quotes around the value removed). */
function cookieValue(header: string | string[] | undefined, name: string): string | undefined {
  const text = Array.isArray(header) ? header.join('; ') : header;
  if (typeof text !== 'string' || text.length > 16_384) return undefined;
  for (const pair of text.split(';')) {
    const at = pair.indexOf('=');
    if (at < 0 || pair.slice(0, at).trim() !== name) continue;
    let value = pair.slice(at + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) {
      value = value.slice(1, -1);
    }
    return value === '' ? undefined : value;
  }
  return undefined;
}

/** Adds a `Set-Cookie` line without replacing others (Express `append`, Fastify `header`, Node). */
function appendSetCookie(response: HttpResponseLike, line: string): void {
  const target = response as HttpResponseLike & {
    append?(name: string, value: string): unknown;
    getHeader?(name: string): unknown;
  };
  if (typeof target.append === 'function') {
    target.append('Set-Cookie', line); // Express
  } else if (typeof target.header === 'function') {
    target.header('set-cookie', line); // Fastify keeps every set-cookie value
  } else if (typeof target.setHeader === 'function') {
    const existing = target.getHeader?.('set-cookie');
    const lines = Array.isArray(existing)
      ? [...(existing as string[]), line]
      : typeof existing === 'string'
        ? [existing, line]
        : [line];
    (target.setHeader as unknown as (name: string, value: string[]) => unknown)(
      'Set-Cookie',
      lines,
    );
  }
}
