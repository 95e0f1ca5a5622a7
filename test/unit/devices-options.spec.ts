/**
 * Bad trusted-device settings are errors that name what was wrong, at startup or when the
 * decorator runs, never a silent default: the module's `devices` option, `@Attempt`'s `devices`,
 * and the environment variables.
 */
import { Attempt } from '../../lib/nest/attempt/attempt.decorator';
import { redlimitOptionsFromEnv } from '../../lib/config/options-from-env.util';
import { RedlimitDevices } from '../../lib/nest/attempt/redlimit-devices.service';
import type { RedlimitModuleOptions } from '../../lib/config/redlimit-options.interface';

const SECRET = 'a device secret of 32 characters';

function devices(options: RedlimitModuleOptions): RedlimitDevices {
  // The constructor only reads options; the store, registry and HTTP helpers are used later.
  return new RedlimitDevices(options, undefined as never, undefined as never, undefined as never);
}

describe('the devices option', () => {
  it('is off without it, and on with a secret (its own, or keySecret)', () => {
    expect(devices({}).enabled).toBe(false);
    expect(devices({ devices: { secret: SECRET } }).enabled).toBe(true);
    expect(devices({ keySecret: SECRET, devices: {} }).ttlMs).toBe(30 * 86_400_000);
    expect(devices({ keySecret: SECRET, devices: { ttl: '7d' } }).ttlMs).toBe(7 * 86_400_000);
  });

  it.each([
    [{ devices: {} }, /needs a secret of at least 16 characters/],
    [{ devices: { secret: 'short' } }, /devices.secret is too short/],
    [
      { keySecret: SECRET, devices: { secret: 42 as never } },
      /devices.secret is too short or not a string/,
    ],
    [{ keySecret: SECRET, devices: null as never }, /devices must be an object/],
    [
      { keySecret: SECRET, devices: { ttl: '30s' } },
      /devices.ttl must be from 1 minute to 366 days/,
    ],
    [
      { keySecret: SECRET, devices: { ttl: '367d' } },
      /devices.ttl must be from 1 minute to 366 days/,
    ],
    [{ keySecret: SECRET, devices: { ttl: 'soon' } }, /devices.ttl/],
    [
      { keySecret: SECRET, devices: { lifetime: '30d' } as never },
      /devices.lifetime is not an option/,
    ],
    [
      { keySecret: SECRET, devices: { maxFailures: 0 } },
      /maxFailures must be a whole number from 1 to 10000/,
    ],
    [{ keySecret: SECRET, devices: { maxFailures: 2.5 } }, /maxFailures/],
    [{ keySecret: SECRET, devices: { maxFailures: 10_001 } }, /maxFailures/],
    [
      { keySecret: SECRET, devices: { cookie: { name: 'a b' } } },
      /cookie.name must be a cookie name/,
    ],
    [{ keySecret: SECRET, devices: { cookie: { path: 'x' } } }, /cookie.path must start with/],
    [{ keySecret: SECRET, devices: { cookie: { path: '/a;b' } } }, /cookie.path/],
    [{ keySecret: SECRET, devices: { cookie: { domain: 'a;b' } } }, /cookie.domain/],
    [{ keySecret: SECRET, devices: { cookie: { secure: 'yes' as never } } }, /cookie.secure/],
    [{ keySecret: SECRET, devices: { cookie: { sameSite: 'lax' as never } } }, /sameSite/],
    [
      { keySecret: SECRET, devices: { cookie: { sameSite: 'None', secure: false } } },
      /sameSite None needs secure/,
    ],
    [
      { keySecret: SECRET, devices: { cookie: { maxAge: 5 } as never } },
      /cookie.maxAge is not an option/,
    ],
    [
      { keySecret: SECRET, devices: { header: 'bad header' } },
      /devices.header must be an HTTP header name/,
    ],
    [
      { keySecret: SECRET, devices: { cookie: false, header: false } },
      /no token could ever be presented/,
    ],
  ] as Array<[RedlimitModuleOptions, RegExp]>)('refuses %j', (options, message) => {
    expect(() => devices(options)).toThrow(message);
  });

  it('never shows the secret in an error', () => {
    try {
      devices({ devices: { secret: 'sh0rt-secret' } });
    } catch (error) {
      expect(String(error)).not.toContain('sh0rt-secret');
    }
  });
});

describe("@Attempt's devices", () => {
  const apply = (parts: Parameters<typeof Attempt>[0], options: Parameters<typeof Attempt>[1]) => {
    class C {
      handler(_attempt: unknown): void {}
    }
    Attempt(parts, options)(C.prototype, 'handler', 0);
  };

  it('takes true (one login part) or a part as written', () => {
    expect(() => apply(['ip', 'body.email'], { devices: true })).not.toThrow();
    expect(() => apply(['ip', 'user', 'body.email'], { devices: true })).not.toThrow();
    expect(() => apply(['ip', 'body.email'], { devices: 'body.email' })).not.toThrow();
    expect(() => apply(['ip', 'body.email'], { devices: false })).not.toThrow();
  });

  it.each([
    [['ip', 'body.email'], { devices: 'email' }, /must be true or name one of its parts/],
    [['ip', 'body.email'], { devices: 1 }, /must be true or name one of its parts/],
    [['ip', 'body.email'], { devices: 'ip' }, /'ip' is not a login/],
    [['ip', 'user'], { devices: 'user' }, /'user' is not a login/],
    [['ip', 'user'], { devices: true }, /exactly one login part .* \(found 0\)/],
    [
      ['ip', 'body.email', 'body.phone'],
      { devices: true },
      /exactly one login part .* \(found 2\)/,
    ],
    [['ip', 'body.email'], { devices: true, cost: () => 1 }, /devices takes a fixed cost/],
  ] as Array<[string[], Record<string, unknown>, RegExp]>)(
    'refuses %j with %j',
    (parts, options, message) => {
      expect(() => apply(parts, options)).toThrow(message);
    },
  );
});

describe('devices from the environment', () => {
  it('turns devices on with REDLIMIT_DEVICES_SECRET or REDLIMIT_DEVICES_TTL', () => {
    expect(redlimitOptionsFromEnv({ REDLIMIT_DEVICES_SECRET: SECRET }).devices).toEqual({
      secret: SECRET,
    });
    expect(redlimitOptionsFromEnv({ REDLIMIT_DEVICES_TTL: '7d' }).devices).toEqual({ ttl: '7d' });
    expect(redlimitOptionsFromEnv({}).devices).toBeUndefined();
  });

  it.each([
    [{ REDLIMIT_DEVICES_SECRET: 'short' }, /REDLIMIT_DEVICES_SECRET.*at least 16 characters/],
    [{ REDLIMIT_DEVICES_SECRET: '   ' }, /REDLIMIT_DEVICES_SECRET.*empty or blank/],
    [{ REDLIMIT_DEVICES_TTL: 'soon' }, /REDLIMIT_DEVICES_TTL.*duration/],
  ])('refuses %j', (env, message) => {
    expect(() => redlimitOptionsFromEnv(env)).toThrow(message);
  });
});
