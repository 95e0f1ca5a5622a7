/**
 * Device tokens: only the holder of the secret makes one, and one made for a login, a prefix, an
 * epoch and an expiry is valid for exactly those. Every single-character change of a valid token
 * is refused (fuzzed), and so is every token of another binding.
 */
import fc from 'fast-check';
import {
  deviceCookieName,
  deviceKey,
  newDeviceNonce,
  signDeviceToken,
  verifyDeviceToken,
} from '../../lib/http/device-token.util';

const SECRET = 'device-secret-of-32-characters!!';
const NOW = 1_800_000_000_000;
const LIFETIME = 30 * 86_400_000;
const binding = {
  secret: SECRET,
  prefix: 'rl:',
  policy: 'sign-in',
  loginKey: 'AAAAAAAAAAAAAAAAAAAAAA',
};
const check = { ...binding, now: NOW, maxLifetimeMs: LIFETIME };

function token(overrides: Partial<Parameters<typeof signDeviceToken>[0]> = {}): string {
  return signDeviceToken({
    ...binding,
    nonce: 'n'.repeat(22),
    epoch: 3,
    expiresAt: NOW / 1000 + 86_400,
    ...overrides,
  });
}

describe('device tokens', () => {
  it('verifies what it signed, and returns its fields', () => {
    expect(verifyDeviceToken(token(), check)).toEqual({
      nonce: 'n'.repeat(22),
      epoch: 3,
      expiresAt: NOW / 1000 + 86_400,
    });
  });

  it('refuses a token of another login, secret, prefix or policy', () => {
    expect(verifyDeviceToken(token(), { ...check, policy: 'staff-sign-in' })).toBe(undefined);
    expect(verifyDeviceToken(token(), { ...check, loginKey: 'BBBBBBBBBBBBBBBBBBBBBB' })).toBe(
      undefined,
    );
    expect(verifyDeviceToken(token(), { ...check, secret: `${SECRET}x` })).toBe(undefined);
    expect(verifyDeviceToken(token(), { ...check, prefix: 'other:' })).toBe(undefined);
  });

  it('refuses an expired token, and one expiring later than a lifetime from now', () => {
    expect(verifyDeviceToken(token({ expiresAt: NOW / 1000 }), check)).toBe(undefined);
    expect(verifyDeviceToken(token({ expiresAt: NOW / 1000 + 1 }), check)).toBeDefined();
    const last = Math.ceil((NOW + LIFETIME) / 1000);
    expect(verifyDeviceToken(token({ expiresAt: last }), check)).toBeDefined();
    expect(verifyDeviceToken(token({ expiresAt: last + 1 }), check)).toBe(undefined);
  });

  it('refuses non-strings, junk, long input and non-canonical numbers', () => {
    for (const junk of [undefined, null, 42, {}, '', 'v1', 'v1....', 'x'.repeat(10_000)]) {
      expect(verifyDeviceToken(junk, check)).toBe(undefined);
    }
    const [v, nonce, , expiry, mac] = token().split('.');
    expect(verifyDeviceToken([v, nonce, '03', expiry, mac].join('.'), check)).toBe(undefined);
    expect(verifyDeviceToken(`${token()} `, check)).toBe(undefined);
    expect(verifyDeviceToken(`v2${token().slice(2)}`, check)).toBe(undefined);
  });

  it('refuses every one-character change of a valid token', () => {
    const valid = token();
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.';
    fc.assert(
      fc.property(fc.nat({ max: valid.length - 1 }), fc.constantFrom(...alphabet), (at, char) => {
        fc.pre(valid[at] !== char);
        const changed = valid.slice(0, at) + char + valid.slice(at + 1);
        return verifyDeviceToken(changed, check) === undefined;
      }),
      { numRuns: 2000 },
    );
  });

  it('names one device key per login and device, none leading back to the token', () => {
    const nonce = newDeviceNonce();
    expect(nonce).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(newDeviceNonce()).not.toBe(nonce);
    const key = deviceKey(binding, nonce);
    expect(key).toMatch(/^device:[A-Za-z0-9_-]{22}$/);
    expect(deviceKey(binding, nonce)).toBe(key);
    expect(deviceKey({ ...binding, loginKey: 'email:BBBBBBBBBBBBBBBBBBBBBB' }, nonce)).not.toBe(
      key,
    );
    expect(key).not.toContain(nonce);
  });

  it('names one cookie per login and policy, which nobody without the secret can name', () => {
    const name = deviceCookieName('redlimit_device', binding);
    expect(name).toMatch(/^redlimit_device\.[A-Za-z0-9_-]{12}$/);
    expect(deviceCookieName('redlimit_device', binding)).toBe(name);
    for (const other of [
      { ...binding, loginKey: 'BBBBBBBBBBBBBBBBBBBBBB' },
      { ...binding, policy: 'staff-sign-in' },
      { ...binding, prefix: 'other:' },
      { ...binding, secret: `${SECRET}x` },
    ]) {
      expect(deviceCookieName('redlimit_device', other)).not.toBe(name);
    }
  });
});
