/**
 * Trusted devices (issue 27) under attack, on Express and Fastify, on Redis and on the in-memory
 * store: an attacker from many addresses keeps the account locked for untrusted clients, while
 * the owner who signed in before the attack gets in on every try with the device token; tokens
 * that are not the owner's valid one are exactly no token; a device that keeps failing is locked
 * out on its own. Both stores run on a clock the spec moves, so windows never turn mid-spec and
 * two requests in a row see the same instant.
 */
import type { Redis } from 'ioredis';
import { attemptKey, LimiterRegistry, MemoryStore, RedlimitDevices } from '../../../lib/nest';
import { signDeviceToken, verifyDeviceToken } from '../../../lib/http/device-token.util';
import { createTestClient, uniquePrefix } from '../../support/redis';
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import {
  ADA,
  addressSource,
  devicesStore,
  windowClock,
  deviceCookieFor,
  devicesApp,
  GRACE,
  KEY_SECRET,
  LIFETIME_S,
  ManualClock,
  MAX_FAILURES,
  SIGN_IN_LIMIT,
  SIGN_IN_WINDOW_MS,
} from './devices.app';

type StoreKind = 'redis' | 'memory';
const STORES: StoreKind[] = ['redis', 'memory'];

const OWNER_IP = '198.51.100.7';
const COOKIE = 'redlimit_device';
const HEADER = 'redlimit-device';
const OTHER_SECRET = 'another app secret, also 16+ characters';

/** How a request carries a token. */
interface Carry {
  readonly token?: string;
  readonly via?: 'cookie' | 'header';
  /** A Cookie header as a browser would send it (other cookies around the token). */
  readonly cookieHeader?: string;
  /** Header or cookie name other than the configured one. */
  readonly name?: string;
}

/** What a client can observe of a response, with the one random part (a new token) masked. */
interface Observed {
  readonly status: number;
  readonly body: string;
  readonly headers: ReadonlyArray<readonly [string, string]>;
}

/** Headers that differ between any two responses, whatever the request. */
const TRANSPORT_HEADERS = new Set(['date', 'connection', 'keep-alive', 'set-cookie']);

async function observe(response: Response): Promise<Observed> {
  const headers: Array<[string, string]> = [];
  response.headers.forEach((value, name) => {
    if (!TRANSPORT_HEADERS.has(name)) headers.push([name, value]);
  });
  for (const cookie of response.headers.getSetCookie()) {
    headers.push([
      'set-cookie',
      cookie.replace(/^redlimit_device\.[^=]*=[^;]*/, 'redlimit_device…=…'),
    ]);
  }
  headers.sort(([a, x], [b, y]) => (a === b ? x.localeCompare(y) : a.localeCompare(b)));
  return { status: response.status, body: await response.text(), headers };
}

/** The device cookie a response sets, whole (`redlimit_device.<tag>=…; Path=/; …`), if any. */
function deviceCookie(response: Response): string | undefined {
  return response.headers.getSetCookie().find((cookie) => cookie.startsWith(`${COOKIE}.`));
}

/** The device token a response sets; fails the spec when there is none. */
function tokenOf(response: Response): string {
  const cookie = deviceCookie(response);
  if (cookie === undefined) {
    throw new Error(
      `expected a ${COOKIE} cookie; got ${JSON.stringify(response.headers.getSetCookie())}`,
    );
  }
  return cookie.slice(cookie.indexOf('=') + 1).split(';')[0]!;
}

/** `v1.<nonce>.<epoch>.<expiresAt s>.<mac>` */
function segments(token: string): string[] {
  const parts = token.split('.');
  expect(parts).toHaveLength(5);
  return parts;
}

/** The token with one character of segment `index` changed (the segment's first character). */
function flip(token: string, index: number): string {
  const parts = segments(token);
  const segment = parts[index]!;
  const first = segment[0]!;
  const other = /[0-9]/.test(first) ? String((Number(first) + 1) % 10) : first === 'A' ? 'B' : 'A';
  parts[index] = other + segment.slice(1);
  return parts.join('.');
}

describe.each(PLATFORMS)('trusted devices under a lockout attack on %s', (platform) => {
  describe.each(STORES)('on the %s store', (kind) => {
    let client: Redis | undefined;
    let app: RunningApp;
    /** The app to close after the spec (none when it failed to boot). */
    let running: RunningApp | undefined;
    let clock: ManualClock;
    let prefix: string;
    /** A client address of its own (a botnet has thousands). */
    const fresh = addressSource();

    beforeAll(() => {
      if (kind === 'redis') client = createTestClient();
    });
    afterAll(async () => {
      await client?.quit();
    });
    beforeEach(async () => {
      clock = windowClock();
      prefix = uniquePrefix('e2e-devices');
      const store = devicesStore(kind, client, prefix, clock);
      running = app = await startApp(devicesApp({ store, prefix }), platform);
    });
    afterEach(async () => {
      await running?.close();
      running = undefined;
    });

    const signIn = (email: string, password: string, ip: string, carry: Carry = {}) => {
      const headers: Record<string, string> = { 'x-forwarded-for': ip };
      if (carry.cookieHeader !== undefined) headers.cookie = carry.cookieHeader;
      if (carry.token !== undefined) {
        if (carry.via === 'header') headers[carry.name ?? HEADER] = carry.token;
        else headers.cookie = `${carry.name ?? deviceCookieFor(email, prefix)}=${carry.token}`;
      }
      return app.request('/auth/sign-in', { method: 'POST', headers, body: { email, password } });
    };
    const devices = () => app.app.get(RedlimitDevices);
    const partKey = (email: string) => attemptKey('email', email, KEY_SECRET);
    // Tokens bind the login (the hash of its normalised value), whatever the part is named.
    const loginKey = (email: string) => partKey(email).slice('email:'.length);
    const nowS = () => Math.floor(clock.now / 1000);

    /** The owner signs in from home, before any attack: the device token they hold from then on. */
    async function ownerToken(email = ADA.email, password = ADA.password): Promise<string> {
      const response = await signIn(email, password, OWNER_IP);
      expect(response.status).toBe(200);
      return tokenOf(response);
    }

    /** Five wrong passwords from five addresses: the account is out of budget for untrusted clients. */
    async function lockAccount(email: string): Promise<void> {
      for (let i = 0; i < SIGN_IN_LIMIT; i++) {
        expect((await signIn(email, `guess ${i}`, fresh())).status).toBe(401);
      }
      expect((await signIn(email, 'guess', fresh())).status).toBe(429);
    }

    /**
     * The same request, once without a token and once carrying `carry`, each from an address of
     * its own (the guard's per-IP layer alike), at the same instant, on the same account state.
     */
    async function expectSameAsNoToken(
      email: string,
      password: string,
      carry: Carry,
      label: string,
      prepare: () => Promise<void> = () => Promise.resolve(),
    ): Promise<Observed> {
      await prepare();
      const without = await observe(await signIn(email, password, fresh()));
      await prepare();
      const withBad = await observe(await signIn(email, password, fresh(), carry));
      expect({ label, ...withBad }).toEqual({ label, ...without });
      return without;
    }

    it('the attacker from many addresses keeps the account locked for untrusted clients; the owner who signed in before the attack gets in on every try', async () => {
      const token = await ownerToken();
      const [, nonce] = segments(token);

      const attacker: number[] = [];
      for (let i = 0; i < 40; i++)
        attacker.push((await signIn(ADA.email, `guess ${i}`, fresh())).status);
      expect(attacker).toEqual([...Array<number>(5).fill(401), ...Array<number>(35).fill(429)]);
      // The owner without the token, from home, with the right password: locked out like anyone.
      expect((await signIn(ADA.email, ADA.password, OWNER_IP)).status).toBe(429);

      const spellings = [ADA.email, ' Ada@Example.COM ', 'ADA@EXAMPLE.COM'];
      const carries: Carry[] = [
        { token },
        { token, via: 'header' },
        { cookieHeader: `theme=dark; ${deviceCookieFor(ADA.email, prefix)}=${token}; lang=en` },
      ];
      for (let i = 0; i < 12; i++) {
        const carry = carries[i % carries.length]!;
        const owner = await signIn(spellings[i % spellings.length]!, ADA.password, OWNER_IP, carry);
        expect({ try: i, status: owner.status }).toEqual({ try: i, status: 200 });
        expect(await owner.json()).toEqual({ user: ADA.email });
        // Renewed, same device.
        expect(segments(tokenOf(owner))[1]).toBe(nonce);
        // The owner's success unlocks nothing for anyone else: the account's failures still count.
        expect((await signIn(ADA.email, ADA.password, fresh())).status).toBe(429);
        expect((await signIn(ADA.email, `guess again ${i}`, fresh())).status).toBe(429);
      }
    });

    it("the device cookie: HttpOnly, Secure, SameSite=Lax, Path=/, Max-Age = the lifetime, beside the app's own cookie; none on a failure or a refusal", async () => {
      const ok = await signIn(ADA.email, ADA.password, OWNER_IP);
      expect(ok.status).toBe(200);
      const cookies = ok.headers.getSetCookie();
      expect(cookies.filter((cookie) => cookie.startsWith(`${COOKIE}.`))).toHaveLength(1);
      expect(deviceCookie(ok)).toMatch(
        new RegExp(`^${deviceCookieFor(ADA.email, prefix).replace('.', '\\.')}=`),
      );
      expect(cookies.filter((cookie) => cookie.startsWith('session='))).toHaveLength(1);
      const attributes = deviceCookie(ok)!
        .split(';')
        .slice(1)
        .map((attribute) => attribute.trim().toLowerCase());
      expect(attributes).toEqual(
        expect.arrayContaining([
          'httponly',
          'secure',
          'samesite=lax',
          'path=/',
          `max-age=${LIFETIME_S}`,
        ]),
      );
      expect(attributes.some((attribute) => attribute.startsWith('domain='))).toBe(false);

      const token = tokenOf(ok);
      expect(token).toMatch(/^v1\.[A-Za-z0-9_-]+\.\d+\.\d+\.[A-Za-z0-9_-]+$/);
      const verified = verifyDeviceToken(token, {
        secret: KEY_SECRET,
        prefix,
        policy: 'sign-in',
        loginKey: loginKey(ADA.email),
        now: Date.now(),
        maxLifetimeMs: LIFETIME_S * 1000,
      });
      expect(verified).toMatchObject({ nonce: segments(token)[1], epoch: 0 });
      expect(Math.abs(verified!.expiresAt - (nowS() + LIFETIME_S))).toBeLessThanOrEqual(24 * 3600);
      // Bound to the login: the same token does not verify for another one.
      expect(
        verifyDeviceToken(token, {
          secret: KEY_SECRET,
          prefix,
          policy: 'sign-in',
          loginKey: loginKey(GRACE.email),
          now: Date.now(),
          maxLifetimeMs: LIFETIME_S * 1000,
        }),
      ).toBeUndefined();

      const failed = await signIn(ADA.email, 'guess', fresh());
      expect(failed.status).toBe(401);
      expect(deviceCookie(failed)).toBeUndefined();
      await lockAccount(GRACE.email);
      const refused = await signIn(GRACE.email, GRACE.password, OWNER_IP);
      expect(refused.status).toBe(429);
      expect(deviceCookie(refused)).toBeUndefined();
    });

    it("tokens that are not the owner's valid one answer exactly as no token (status, body, rate-limit headers), open account or locked", async () => {
      const token = await ownerToken();
      const graceToken = await ownerToken(GRACE.email, GRACE.password);
      const [, nonce, epochText, expiresText] = segments(token);
      const epoch = Number(epochText);
      const sign = (secret: string, expiresAt: number) =>
        signDeviceToken({
          secret,
          prefix,
          policy: 'sign-in',
          loginKey: loginKey(ADA.email),
          nonce: nonce!,
          epoch,
          expiresAt,
        });

      // The harness signs as the app does: the owner's token verifies with these inputs, and a
      // token it re-signs (same device, a later expiry) is taken for the owner's (checked below).
      expect(
        verifyDeviceToken(token, {
          secret: KEY_SECRET,
          prefix,
          policy: 'sign-in',
          loginKey: loginKey(ADA.email),
          now: Date.now(),
          maxLifetimeMs: LIFETIME_S * 1000,
        }),
      ).toEqual({ nonce, epoch, expiresAt: Number(expiresText) });
      const resigned = sign(KEY_SECRET, nowS() + 3600);

      const bad: Array<[string, string]> = [
        ["another login's token", graceToken],
        ['signed with another secret', sign(OTHER_SECRET, nowS() + 3600)],
        ['expired a minute ago', sign(KEY_SECRET, nowS() - 60)],
        ['version flipped', flip(token, 0)],
        ['nonce flipped', flip(token, 1)],
        ['epoch flipped', flip(token, 2)],
        ['expiry flipped', flip(token, 3)],
        ['mac flipped', flip(token, 4)],
        ['mac cut short', token.slice(0, -4)],
        ['a segment dropped', segments(token).slice(0, 4).join('.')],
        ['a segment added', `${token}.0`],
        ['garbage', 'not-a-token'],
        ['empty', ''],
        ['dots only', 'v1....'],
        ['4 kB', 'a'.repeat(4096)],
      ];
      const carries: Array<[string, Carry]> = bad.flatMap(
        ([label, value]): Array<[string, Carry]> => [
          [`${label} (cookie)`, { token: value }],
          [`${label} (header)`, { token: value, via: 'header' }],
        ],
      );
      // The owner's valid token under the other channel's name is no token either.
      carries.push(
        ['valid token, header named like the cookie', { token, via: 'header', name: COOKIE }],
        ['valid token, cookie named like the header', { token, name: HEADER }],
      );

      const registry = app.app.get(LimiterRegistry);
      const resetAccount = () => registry.get('sign-in').reset([partKey(ADA.email)]);
      for (const [label, carry] of carries) {
        // Open account, wrong password: 401, charged to the account as without a token.
        const wrong = await expectSameAsNoToken(
          ADA.email,
          'guess',
          carry,
          `${label}, wrong`,
          resetAccount,
        );
        expect(wrong.status).toBe(401);
        // Open account, right password: 200 and a new device (not a renewal of the bad one).
        const right = await expectSameAsNoToken(
          ADA.email,
          ADA.password,
          carry,
          `${label}, right`,
          resetAccount,
        );
        expect(right.status).toBe(200);
      }

      await lockAccount(ADA.email);
      for (const [label, carry] of carries) {
        const locked = await expectSameAsNoToken(
          ADA.email,
          ADA.password,
          carry,
          `${label}, locked`,
        );
        expect(locked.status).toBe(429);
      }
      // Not vacuous: the owner's token, and the harness's re-signed one, do get in meanwhile.
      expect((await signIn(ADA.email, ADA.password, OWNER_IP, { token })).status).toBe(200);
      expect((await signIn(ADA.email, ADA.password, OWNER_IP, { token: resigned })).status).toBe(
        200,
      );
      expect(
        (await signIn(ADA.email, ADA.password, OWNER_IP, { token: resigned, via: 'header' }))
          .status,
      ).toBe(200);
    });

    it('revokeAll: every token of the login is no token at once, other logins keep theirs; trust() (recovery) trusts a device again', async () => {
      const laptop = await ownerToken();
      const phone = await ownerToken();
      expect(segments(phone)[1]).not.toBe(segments(laptop)[1]);
      const graceToken = await ownerToken(GRACE.email, GRACE.password);
      await lockAccount(ADA.email);
      await lockAccount(GRACE.email);
      expect((await signIn(ADA.email, ADA.password, OWNER_IP, { token: laptop })).status).toBe(200);

      await devices().revokeAll(ADA.email);
      for (const [label, carry] of [
        ['laptop', { token: laptop }],
        ['phone', { token: phone, via: 'header' }],
      ] as Array<[string, Carry]>) {
        const locked = await expectSameAsNoToken(
          ADA.email,
          ADA.password,
          carry,
          `revoked ${label}`,
        );
        expect(locked.status).toBe(429);
      }
      expect(
        (await signIn(GRACE.email, GRACE.password, OWNER_IP, { token: graceToken })).status,
      ).toBe(200);

      // Recovery (a followed reset link): a new trusted device, cookie on the response.
      const recovered = await app.request('/auth/recover', {
        method: 'POST',
        headers: { 'x-forwarded-for': OWNER_IP },
        body: { email: ' Ada@Example.com' },
      });
      expect(recovered.status).toBe(200);
      const issued = tokenOf(recovered);
      expect(await recovered.json()).toEqual({ token: issued });
      expect(deviceCookie(recovered)).toMatch(new RegExp(`; *Max-Age=${LIFETIME_S}(;|$)`, 'i'));
      const verified = verifyDeviceToken(issued, {
        secret: KEY_SECRET,
        prefix,
        policy: 'sign-in',
        loginKey: loginKey(ADA.email),
        now: Date.now(),
        maxLifetimeMs: LIFETIME_S * 1000,
      });
      expect(verified?.epoch).toBeGreaterThan(Number(segments(laptop)[2]));
      expect((await signIn(ADA.email, ADA.password, OWNER_IP, { token: issued })).status).toBe(200);
      expect(
        (await signIn(ADA.email, ADA.password, fresh(), { token: issued, via: 'header' })).status,
      ).toBe(200);

      // trust() without a response: the token alone, for an API client's header.
      const apiToken = await devices().trust(undefined, ADA.email, { policy: 'sign-in' });
      expect(
        (await signIn(ADA.email, ADA.password, fresh(), { token: apiToken, via: 'header' })).status,
      ).toBe(200);
      // Bound to the login it was issued for.
      const forGrace = await expectSameAsNoToken(
        GRACE.email,
        GRACE.password,
        { token: apiToken },
        "ada's token for grace",
      );
      expect(forGrace.status).toBe(429);
      // The revoked ones stay revoked.
      expect((await signIn(ADA.email, ADA.password, OWNER_IP, { token: laptop })).status).toBe(429);
    });

    it("a device that keeps failing is locked out on its own (its 6th failure 429), and the account's untrusted budget is untouched", async () => {
      const laptop = await ownerToken();
      const phone = await ownerToken();
      // Each failure from another address, so neither the ip part nor the account can be what refuses.
      const device: number[] = [];
      for (let i = 0; i < SIGN_IN_LIMIT + 2; i++) {
        device.push((await signIn(ADA.email, `guess ${i}`, fresh(), { token: laptop })).status);
      }
      expect(device).toEqual([401, 401, 401, 401, 401, 429, 429]);
      const refused = await signIn(ADA.email, ADA.password, fresh(), { token: laptop });
      expect(refused.status).toBe(429); // the right password too: the device is out
      expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(
        SIGN_IN_WINDOW_MS / 1000,
      );

      // The owner's other device is not touched.
      expect((await signIn(ADA.email, ADA.password, OWNER_IP, { token: phone })).status).toBe(200);
      // Untrusted clients still have the account's whole budget: a right password, then five failures.
      expect((await signIn(ADA.email, ADA.password, fresh())).status).toBe(200);
      const untrusted: number[] = [];
      for (let i = 0; i < SIGN_IN_LIMIT + 1; i++)
        untrusted.push((await signIn(ADA.email, 'guess', fresh())).status);
      expect(untrusted).toEqual([401, 401, 401, 401, 401, 429]);

      // The next window: the device has its budget back (it is not over maxFailures).
      clock.advance(SIGN_IN_WINDOW_MS);
      expect((await signIn(ADA.email, ADA.password, OWNER_IP, { token: laptop })).status).toBe(200);
    });

    it(`after maxFailures (${MAX_FAILURES}) failures in its lifetime the device stays refused; successes do not count`, async () => {
      const laptop = await ownerToken();
      const round = async (): Promise<number[]> => {
        const outcome: number[] = [];
        for (const password of [ADA.password, 'g1', ADA.password, 'g2', ADA.password, 'g3', 'g4']) {
          outcome.push((await signIn(ADA.email, password, fresh(), { token: laptop })).status);
        }
        return outcome;
      };
      expect(await round()).toEqual([200, 401, 200, 401, 200, 401, 401]); // 4 failures
      clock.advance(SIGN_IN_WINDOW_MS);
      expect(await round()).toEqual([200, 401, 200, 401, 200, 401, 401]); // 8 failures
      const spent = await signIn(ADA.email, ADA.password, OWNER_IP, { token: laptop });
      expect(spent.status).toBe(429);
      // Until the first failure leaves the device's lifetime (about a week), not a window.
      expect(Number(spent.headers.get('retry-after'))).toBeGreaterThan(6 * 24 * 3600);

      for (const ms of [SIGN_IN_WINDOW_MS, 6 * 3600_000, 24 * 3600_000]) {
        clock.advance(ms);
        expect((await signIn(ADA.email, ADA.password, OWNER_IP, { token: laptop })).status).toBe(
          429,
        );
      }
      // The account itself is open to the owner without the token, which trusts a new device.
      const again = await signIn(ADA.email, ADA.password, OWNER_IP);
      expect(again.status).toBe(200);
      const renewed = tokenOf(again);
      expect(segments(renewed)[1]).not.toBe(segments(laptop)[1]);
      expect((await signIn(ADA.email, ADA.password, OWNER_IP, { token: renewed })).status).toBe(
        200,
      );
    });

    it("contract question: a token past its expiry on the store's clock is no token (one clock, DESIGN §2.5)", async () => {
      const laptop = await ownerToken();
      // A week and an hour later (the lifetime is a week): the account has long been open again.
      clock.advance((LIFETIME_S + 3600) * 1000);
      await lockAccount(ADA.email);
      const locked = await expectSameAsNoToken(
        ADA.email,
        ADA.password,
        { token: laptop },
        'expired',
      );
      expect(locked.status).toBe(429);
    });

    it('attack on the contract: a refunded attempt that is not a sign-in (a 400 refunded by refundOn) trusts no device, so no one guesses past the account budget without the password', async () => {
      // The lenient route refunds everything but a wrong password (malformed requests cost
      // nothing): a password that is not a string gets 400, refunded, without any password check.
      const mint = () =>
        app.request('/auth/sign-in-lenient', {
          method: 'POST',
          headers: { 'x-forwarded-for': fresh() },
          body: { email: ADA.email, password: 42 },
        });
      // Three times: a 400, then five guesses carrying whatever cookies it set.
      const checked: number[] = [];
      const minted: Response[] = [];
      for (let round = 0; round < 3; round++) {
        const response = await mint();
        // 400 while the account has budget; 429 once the guesses spent it (no device was minted).
        expect([400, 429]).toContain(response.status);
        minted.push(response);
        const cookies = response.headers.getSetCookie().map((cookie) => cookie.split(';')[0]!);
        for (let i = 0; i < SIGN_IN_LIMIT; i++) {
          const guess = await signIn(ADA.email, `guess ${round}.${i}`, fresh(), {
            cookieHeader: cookies.join('; '),
          });
          checked.push(guess.status);
        }
      }
      // The account's budget bounds the guesses checked in one window: 5, not 5 per minted device.
      expect(checked.filter((status) => status === 401)).toHaveLength(SIGN_IN_LIMIT);
      expect(minted.map(deviceCookie)).toEqual([undefined, undefined, undefined]);
    });

    it("attack on the contract: a tossed cookie (another redlimit_device, sent before the owner's) does not shadow the owner's token", async () => {
      const token = await ownerToken();
      await lockAccount(ADA.email);
      // A sibling subdomain (or a page on http://) can set a cookie of the same name for a longer
      // path; the browser then sends it first. Every value of the name is a candidate.
      for (const tossed of ['x', flip(token, 4)]) {
        const owner = await signIn(ADA.email, ADA.password, OWNER_IP, {
          cookieHeader: `${deviceCookieFor(ADA.email, prefix)}=${tossed}; ${deviceCookieFor(ADA.email, prefix)}=${token}`,
        });
        expect({ tossed, status: owner.status }).toEqual({ tossed, status: 200 });
      }
    });

    if (kind === 'memory') {
      it('attack on the contract: a flood of new keys past MemoryStore maxKeys does not undo revokeAll', async () => {
        await app.close();
        running = undefined;
        const store = new MemoryStore({ clock: clock.read, maxKeys: 200 });
        running = app = await startApp(devicesApp({ store, prefix }), platform);
        const stolen = await ownerToken();
        await devices().revokeAll(ADA.email);
        await lockAccount(ADA.email);
        // 300 sign-ins for accounts that do not exist, each from its own address: 600+ new keys.
        for (let i = 0; i < 300; i++) await signIn(`nobody${i}@example.com`, 'guess', fresh());
        // Locked again, whatever the flood pushed out.
        let status = 0;
        for (let i = 0; i <= SIGN_IN_LIMIT && status !== 429; i++) {
          status = (await signIn(ADA.email, 'guess', fresh())).status;
        }
        expect(status).toBe(429);
        const locked = await expectSameAsNoToken(
          ADA.email,
          ADA.password,
          { token: stolen },
          'revoked, after a flood',
        );
        expect(locked.status).toBe(429);
      });
    }
  });
});
