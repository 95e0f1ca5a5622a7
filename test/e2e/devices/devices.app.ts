import { attemptKey } from '../../../lib/http/key-hash.util';
import { deviceCookieName } from '../../../lib/http/device-token.util';
/**
 * Fixture: the sample's sign-in (fixed-window 5/15m per IP and per account, a right password
 * refunded) with trusted devices on the account part, behind a proxy on the loopback (the client
 * is named by X-Forwarded-For), a recovery route that trusts a device without a password (as a
 * password-reset link would), and a session cookie of the app's own beside the device cookie.
 */
import {
  BadRequestException,
  Body,
  Controller,
  HttpCode,
  Module,
  Param,
  Post,
  Res,
  type Type,
  UnauthorizedException,
} from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import type { Redis } from 'ioredis';
import {
  Attempt,
  type DevicesOptions,
  type PolicyDefinition,
  type HttpResponseLike,
  MemoryStore,
  RedisStore,
  RedlimitDevices,
  RedlimitGuard,
  RedlimitModule,
  type Store,
} from '../../../lib/nest';

export const ADA = { email: 'ada@example.com', password: 'correct horse battery staple' };
export const GRACE = { email: 'grace@example.com', password: 'cobol forever' };
const USERS: ReadonlyMap<string, string> = new Map([
  [ADA.email, ADA.password],
  [GRACE.email, GRACE.password],
]);

/** Staff accounts: Ada is staff too, with a password of her own there. */
export const STAFF_PASSWORD = 'staff: a different passphrase';
const STAFF: ReadonlyMap<string, string> = new Map([[ADA.email, STAFF_PASSWORD]]);

/** The module's keySecret, which also signs device tokens (no `devices.secret` of their own). */
export const KEY_SECRET = 'devices e2e key secret, 16+ characters';
/** Token lifetime: a week, in seconds (the cookie's Max-Age). */
export const LIFETIME_S = 7 * 24 * 3600;
/** Failures one device may make per token lifetime (small, so a spec reaches it). */
export const MAX_FAILURES = 8;
/** The sample's sign-in policy. */
export const SIGN_IN_LIMIT = 5;
export const SIGN_IN_WINDOW_MS = 15 * 60_000;

/** The devices options of these specs. */
export const DEVICES: DevicesOptions = { ttl: '7d', maxFailures: MAX_FAILURES };

/** A clock the spec moves by hand (store windows, lockouts and device lifetimes follow it). */
export class ManualClock {
  constructor(public now: number) {}
  readonly read = (): number => this.now;
  advance(ms: number): void {
    this.now += ms;
  }
}

/**
 * A clock a second into a 15-minute window, at or just before real time (token expiry may be
 * checked against either clock: both agree on what is past and what is a week ahead).
 */
export function windowClock(): ManualClock {
  return new ManualClock(Math.floor(Date.now() / SIGN_IN_WINDOW_MS) * SIGN_IN_WINDOW_MS + 1000);
}

/** The spec's store on `clock`: Redis through `client` under `prefix`, or in memory. */
export function devicesStore(
  kind: 'redis' | 'memory',
  client: Redis | undefined,
  prefix: string,
  clock: ManualClock,
): Store {
  return kind === 'redis'
    ? new RedisStore({ client: client!, prefix, clock: clock.read, fleetBeatMs: 100 })
    : new MemoryStore({ clock: clock.read });
}

/** Client addresses, each of its own (a botnet has thousands). */
export function addressSource(): () => string {
  let addresses = 0;
  return () => {
    addresses++;
    return `203.0.${Math.floor(addresses / 250)}.${(addresses % 250) + 1}`;
  };
}

/** Express (`append`) and Fastify (`header`, which appends Set-Cookie) responses alike. */
interface CookieResponse extends HttpResponseLike {
  append?(name: string, value: string): unknown;
}

/** The app's own session cookie, set by the handler; the device cookie must not replace it. */
function setSessionCookie(response: CookieResponse, user: string): void {
  const cookie = `session=${encodeURIComponent(user)}; Path=/; HttpOnly`;
  if (typeof response.append === 'function') response.append('Set-Cookie', cookie);
  else response.header?.('set-cookie', cookie);
}

export interface DevicesAppOptions {
  readonly store: Store;
  /** The module's key prefix (the RedisStore's prefix too, when the store is one). */
  readonly prefix: string;
  readonly devices?: DevicesOptions;
  /** The sign-in policy's name (default `'sign-in'`). */
  readonly policyName?: string;
  /** Further policies of the app's own. */
  readonly extraPolicies?: Readonly<Record<string, PolicyDefinition>>;
  /** The module's fail mode (default: the policies' own, closed). */
  readonly failMode?: 'closed' | 'open' | 'memory';
}

export function devicesApp(options: DevicesAppOptions): Type {
  const signInPolicy = options.policyName ?? 'sign-in';
  @Controller('auth')
  class AuthController {
    constructor(private readonly devices: RedlimitDevices) {}

    /** The sample's sign-in, with trusted devices on the account part. */
    @Post('sign-in')
    @HttpCode(200)
    signIn(
      @Body() body: { email?: string; password?: string },
      @Attempt(['ip', 'body.email'], { policy: signInPolicy, devices: 'body.email' })
      attempt: Attempt,
      @Res({ passthrough: true }) response: CookieResponse,
    ): { user: string } {
      const user = String(body?.email ?? '')
        .trim()
        .toLowerCase();
      if (USERS.get(user) !== String(body?.password ?? '')) {
        throw new UnauthorizedException('Wrong email or password'); // the attempt keeps its cost
      }
      attempt.refund();
      setSessionCookie(response, user);
      return { user };
    }

    /**
     * The same sign-in on a route that refunds everything but a wrong password (malformed requests
     * cost nothing), as apps do with `refundOn`: a password that is not a string gets 400.
     */
    @Post('sign-in-lenient')
    @HttpCode(200)
    signInLenient(
      @Body() body: { email?: unknown; password?: unknown },
      @Attempt(['ip', 'body.email'], {
        policy: signInPolicy,
        devices: 'body.email',
        refundOn: (outcome) =>
          !(outcome.ok === false && outcome.error instanceof UnauthorizedException),
      })
      _attempt: Attempt,
    ): { user: string } {
      if (typeof body?.email !== 'string' || typeof body.password !== 'string') {
        throw new BadRequestException('email and password must be strings');
      }
      const user = body.email.trim().toLowerCase();
      if (USERS.get(user) !== body.password)
        throw new UnauthorizedException('Wrong email or password');
      return { user };
    }

    /**
     * A careless sign-in that refunds before it checks the password, then throws 401 (`throw`)
     * or answers 401 through the passthrough response (`status`): neither proved the login.
     */
    @Post('sign-in-refund-first/:how')
    @HttpCode(200)
    signInRefundFirst(
      @Body() body: { email?: string; password?: string },
      @Param('how') how: string,
      @Attempt(['ip', 'body.email'], { policy: signInPolicy, devices: 'body.email' })
      attempt: Attempt,
      @Res({ passthrough: true })
      response: { status?(code: number): unknown; code?(code: number): unknown },
    ): { user?: string } {
      attempt.refund();
      const user = String(body?.email ?? '')
        .trim()
        .toLowerCase();
      if (USERS.get(user) === String(body?.password ?? '')) return { user };
      if (how === 'throw') throw new UnauthorizedException('Wrong email or password');
      if (typeof response.code === 'function') response.code(401);
      else response.status?.(401);
      return {};
    }

    /**
     * A second sign-in for another kind of account (staff) whose logins are emails too: the same
     * email may name a customer and a staff member with their own passwords.
     */
    @Post('staff-sign-in')
    @HttpCode(200)
    staffSignIn(
      @Body() body: { email?: string; password?: string },
      @Attempt(['ip', 'body.email'], { policy: 'staff-sign-in', devices: 'body.email' })
      attempt: Attempt,
    ): { staff: string } {
      const user = String(body?.email ?? '')
        .trim()
        .toLowerCase();
      if (STAFF.get(user) !== String(body?.password ?? '')) {
        throw new UnauthorizedException('Wrong email or password');
      }
      attempt.refund();
      return { staff: user };
    }

    /**
     * Stands in for a followed password-reset link: trusts the caller's device for the account
     * (cookie on the response) and hands the token over for API clients.
     */
    @Post('recover')
    @HttpCode(200)
    async recover(
      @Body() body: { email?: string },
      @Res({ passthrough: true }) response: HttpResponseLike,
    ): Promise<{ token: string }> {
      const token = await this.devices.trust(response, String(body?.email ?? ''), {
        policy: 'sign-in',
      });
      return { token };
    }
  }

  @Module({
    imports: [
      RedlimitModule.forRoot({
        store: options.store,
        prefix: options.prefix,
        keySecret: KEY_SECRET,
        ...(options.failMode !== undefined && { failMode: options.failMode }),
        headers: 'ietf',
        clientIp: { trustedProxies: ['loopback'] },
        policies: {
          ...options.extraPolicies,
          [signInPolicy]: {
            algorithm: 'fixed-window',
            limit: SIGN_IN_LIMIT,
            window: SIGN_IN_WINDOW_MS,
          },
          'staff-sign-in': {
            algorithm: 'fixed-window',
            limit: SIGN_IN_LIMIT,
            window: SIGN_IN_WINDOW_MS,
          },
          api: { algorithm: 'sliding-window', limit: 100, window: '1m' },
        },
        defaultPolicy: 'api',
        devices: options.devices ?? DEVICES,
      }),
    ],
    controllers: [AuthController],
    providers: [{ provide: APP_GUARD, useClass: RedlimitGuard }],
  })
  class DevicesAppModule {}
  return DevicesAppModule;
}

/**
 * The name of the device cookie of `email` on `policy` in an app with key prefix `prefix`:
 * `redlimit_device.<tag>`, one per login and policy.
 */
export function deviceCookieFor(email: string, prefix: string, policy = 'sign-in'): string {
  const loginKey = attemptKey('email', email, KEY_SECRET).slice('email:'.length);
  return deviceCookieName('redlimit_device', { secret: KEY_SECRET, prefix, policy, loginKey });
}
