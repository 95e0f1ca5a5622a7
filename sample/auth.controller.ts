import {
  BadRequestException,
  Body,
  Controller,
  ForbiddenException,
  Headers,
  HttpCode,
  Post,
} from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { createHash, timingSafeEqual } from 'node:crypto';
import { Attempt, canonicalIp, groupIp, LimiterRegistry, RedlimitHttp } from '../lib/nest';
import { AuthService } from './auth.service';

interface SignInBody {
  email?: string;
  password?: string;
}

/** The admin token's variable: unset, `POST /auth/unlock` is off. */
const ADMIN_TOKEN = 'REDLIMIT_SAMPLE_ADMIN_TOKEN';

@Controller('auth')
export class AuthController {
  /** SHA-256 of the admin token, or undefined when unlock is off. */
  private readonly adminTokenHash?: Buffer;

  constructor(
    private readonly auth: AuthService,
    private readonly limits: LimiterRegistry,
    private readonly http: RedlimitHttp,
    config: ConfigService,
  ) {
    const token = config.get<string>(ADMIN_TOKEN);
    if (token !== undefined && token !== '') {
      if (token.length < 16) {
        throw new Error(`${ADMIN_TOKEN} must be at least 16 characters (it has ${token.length})`);
      }
      this.adminTokenHash = sha256(token);
    }
  }

  /**
   * Five wrong passwords per 15 minutes per IP and per account (one decision charges both); a
   * right password is refunded, so only failures cost. The 6th failure — or any sign-in after
   * it, right password or not — gets 429 before this method runs. The part names the body, where
   * this method reads the email.
   *
   * A right password also sets a device cookie (`redlimit_device.<tag>`, one per account; API clients may send it back
   * in a `redlimit-device` header). Sign-ins that carry it for the same email are charged to that
   * device, not to the account: whoever fails on purpose to lock the account out locks out every
   * client but the owner's.
   */
  @Post('sign-in')
  @HttpCode(200)
  signIn(
    @Body() body: SignInBody,
    @Attempt(['ip', 'body.email'], { policy: 'sign-in', devices: 'body.email' }) attempt: Attempt,
  ): { user: string } {
    return this.auth.signIn(String(body?.email ?? ''), String(body?.password ?? ''), attempt);
  }

  /**
   * Admin unlock, for the holder of the admin token (`Authorization: Bearer <token>`, the token in
   * REDLIMIT_SAMPLE_ADMIN_TOKEN, compared in constant time; off when it is unset):
   * `{ "email": "ada@example.com", "ip": "127.0.0.1" }` gives the account, and the address, their
   * full sign-in budget again. Works with the in-memory store too, where no command can reach.
   * The source address proves nothing: behind a proxy on the same host, every request comes from
   * 127.0.0.1.
   */
  @Post('unlock')
  @HttpCode(200)
  async unlock(
    @Headers('authorization') authorization: string | undefined,
    @Body() body: { email?: unknown; ip?: unknown },
  ): Promise<{ unlocked: string[] }> {
    if (this.adminTokenHash === undefined) {
      throw new ForbiddenException(`unlock is off: set ${ADMIN_TOKEN} to turn it on`);
    }
    const presented = /^Bearer +(.+)$/i.exec(authorization ?? '')?.[1];
    if (presented === undefined || !timingSafeEqual(sha256(presented), this.adminTokenHash)) {
      throw new ForbiddenException('unlock needs the admin token: Authorization: Bearer <token>');
    }
    const keys: Array<[string, string]> = [];
    if (typeof body?.email === 'string')
      keys.push(['email', this.http.attemptKey('email', body.email)]);
    const ip = typeof body?.ip === 'string' ? canonicalIp(body.ip) : undefined;
    if (ip !== undefined) keys.push(['ip', this.http.attemptKey('ip', groupIp(ip, 64))]);
    if (keys.length === 0) throw new BadRequestException('give an email, an ip, or both');
    await this.limits.get('sign-in').reset(keys.map(([, key]) => key));
    return { unlocked: keys.map(([part]) => part) };
  }
}

/** Digests of equal length, so that comparing them takes the same time whatever was sent. */
function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
