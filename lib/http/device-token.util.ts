import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * What a trusted-device token carries besides its MAC: the device's id (`nonce`), the login's
 * device epoch when it was issued (a revocation bumps the epoch and voids every earlier token),
 * and its expiry in whole seconds since the epoch.
 */
export interface DeviceTokenFields {
  /** The device's id: 16 random bytes, base64url (22 characters). */
  readonly nonce: string;
  /** The login's device epoch at issue. */
  readonly epoch: number;
  /** Expiry, in whole seconds since 1970 (UTC). */
  readonly expiresAt: number;
}

/** What binds a token: the secret, the module's key prefix, the policy and the login. */
export interface DeviceTokenBinding {
  /** The devices secret (the module's `devices.secret`, else its `keySecret`). */
  readonly secret: string;
  /** The module's key prefix: a token of another app with the same secret is not valid here. */
  readonly prefix: string;
  /**
   * The sign-in policy that trusted the device: a token earned on one policy's routes (customer
   * accounts) is no device on another's (staff accounts of the same email).
   */
  readonly policy: string;
  /**
   * The login, as the hash of its normalised value that `@Attempt` keys carry (`email:<this>`):
   * the same login whatever the part is named.
   */
  readonly loginKey: string;
}

/** The one token layout: `v1.<nonce>.<epoch>.<expiresAt>.<mac>`, each field in canonical form. */
const TOKEN =
  /^v1\.([A-Za-z0-9_-]{22})\.(0|[1-9][0-9]{0,14})\.([1-9][0-9]{0,11})\.([A-Za-z0-9_-]{43})$/;

/**
 * How long a revoked login's device epoch is kept: 366 days, the longest a device token can live
 * (`devices.ttl` at most), so a revocation outlives every token it voids whatever the ttl was or
 * becomes.
 */
export const DEVICE_EPOCH_KEEP_MS = 366 * 86_400_000;

/**
 * Where a login's device epoch is stored (under the store's prefix), for `Store.readEpoch` and
 * `Store.bumpEpoch`: `devices:<login>`, the login as the hash of its normalised value that
 * `@Attempt` keys carry (`email:<this>`).
 *
 * @example
 * await store.bumpEpoch(deviceEpochKey(attemptKey('email', email, keySecret).split(':')[1]!), DEVICE_EPOCH_KEEP_MS);
 */
export function deviceEpochKey(loginKey: string): string {
  return `devices:${loginKey}`;
}

/** Longer input is not a token; checked before any parsing, so junk costs nothing to reject. */
const MAX_TOKEN_LENGTH = 128;

/** Whether `text` has a token's layout (no MAC checked): what is worth verifying at all. */
export function deviceTokenShaped(text: string): boolean {
  return text.length <= MAX_TOKEN_LENGTH && TOKEN.test(text);
}

/** A fresh device id: 16 random bytes, base64url. */
export function newDeviceNonce(): string {
  return randomBytes(16).toString('base64url');
}

/**
 * A device token: `v1.<nonce>.<epoch>.<expiresAt>.<mac>`, the MAC an HMAC-SHA-256 with `secret`
 * over the prefix, the login key and the three fields (length-delimited, so no field can bleed
 * into another). Without the secret a token can be neither made nor moved to another login.
 *
 * @example
 * const token = signDeviceToken({ secret, prefix: 'rl:', loginKey: 'email:…', nonce: newDeviceNonce(), epoch: 0, expiresAt: 1_800_000_000 });
 */
export function signDeviceToken(fields: DeviceTokenBinding & DeviceTokenFields): string {
  const { nonce, epoch, expiresAt } = fields;
  return `v1.${nonce}.${epoch}.${expiresAt}.${mac(fields, nonce, epoch, expiresAt)}`;
}

/**
 * The fields of `token` when it is a well-formed token of this binding (its MAC checks out, in
 * constant time); `undefined` for anything else, whatever was wrong. Says nothing of expiry: see
 * {@link deviceTokenLive}.
 */
export function readDeviceToken(
  token: unknown,
  binding: DeviceTokenBinding,
): DeviceTokenFields | undefined {
  if (typeof token !== 'string' || token.length > MAX_TOKEN_LENGTH) return undefined;
  const match = TOKEN.exec(token);
  if (match === null) return undefined;
  const nonce = match[1]!;
  const epoch = Number(match[2]);
  const expiresAt = Number(match[3]);
  // Compared as text: base64url's spare bits would let other spellings of the MAC decode alike.
  const presented = Buffer.from(match[4]!, 'latin1');
  const expected = Buffer.from(mac(binding, nonce, epoch, expiresAt), 'latin1');
  if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
    return undefined;
  }
  return { nonce, epoch, expiresAt };
}

/**
 * Whether a token's expiry is still ahead at `now` (ms) and no further than `maxLifetimeMs` from
 * it (a token from a longer lifetime setting, or a far future, is not honoured).
 */
export function deviceTokenLive(
  fields: DeviceTokenFields,
  now: number,
  maxLifetimeMs: number,
): boolean {
  return (
    fields.expiresAt > now / 1000 && fields.expiresAt <= Math.ceil((now + maxLifetimeMs) / 1000)
  );
}

/**
 * {@link readDeviceToken} and {@link deviceTokenLive} at once: the fields of a valid, unexpired
 * token of this binding, else `undefined`.
 */
export function verifyDeviceToken(
  token: unknown,
  binding: DeviceTokenBinding & { readonly now: number; readonly maxLifetimeMs: number },
): DeviceTokenFields | undefined {
  const fields = readDeviceToken(token, binding);
  return fields && deviceTokenLive(fields, binding.now, binding.maxLifetimeMs) ? fields : undefined;
}

/**
 * The caller key a trusted device is charged under: `device:<hash>`, an HMAC of the login key and
 * the device id (so one device id names another budget under another login, and nothing in the
 * key leads back to the token).
 */
export function deviceKey(binding: DeviceTokenBinding, nonce: string): string {
  const digest = createHmac('sha256', binding.secret)
    .update(frame(['redlimit-device-key', binding.prefix, binding.policy, binding.loginKey, nonce]))
    .digest('base64url');
  return `device:${digest.slice(0, 22)}`;
}

function mac(binding: DeviceTokenBinding, nonce: string, epoch: number, expiresAt: number): string {
  return createHmac('sha256', binding.secret)
    .update(
      frame([
        'redlimit-device-v1',
        binding.prefix,
        binding.policy,
        binding.loginKey,
        nonce,
        String(epoch),
        String(expiresAt),
      ]),
    )
    .digest('base64url');
}

/**
 * The name of the cookie that holds a binding's token: `<base>.<tag>`, the tag 12 base64url
 * characters of an HMAC of the prefix, policy and login. One cookie per login and policy, so a
 * sign-in to another account (a shared browser, a login CSRF) adds a cookie instead of replacing
 * the owner's, and nobody without the secret can name, and so shadow, the owner's cookie.
 */
export function deviceCookieName(base: string, binding: DeviceTokenBinding): string {
  const tag = createHmac('sha256', binding.secret)
    .update(frame(['redlimit-device-cookie', binding.prefix, binding.policy, binding.loginKey]))
    .digest('base64url')
    .slice(0, 12);
  return `${base}.${tag}`;
}

/** Each field preceded by its length: `a|bc` and `ab|c` frame differently. */
function frame(fields: readonly string[]): string {
  return fields.map((field) => `${field.length}:${field}`).join('');
}
