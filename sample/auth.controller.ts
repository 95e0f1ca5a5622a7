import {
  BadRequestException,
  Body,
  Controller,
  ForbiddenException,
  HttpCode,
  Post,
  Req,
} from '@nestjs/common';
import { Attempt, canonicalIp, groupIp, LimiterRegistry, RedlimitHttp } from '../lib/nest';
import { AuthService } from './auth.service';

interface SignInBody {
  email?: string;
  password?: string;
}

@Controller('auth')
export class AuthController {
  constructor(
    private readonly auth: AuthService,
    private readonly limits: LimiterRegistry,
    private readonly http: RedlimitHttp,
  ) {}

  /**
   * Five wrong passwords per 15 minutes per IP and per account (one decision charges both); a
   * right password is refunded, so only failures cost. The 6th failure — or any sign-in after
   * it, right password or not — gets 429 before this method runs. The part names the body, where
   * this method reads the email.
   */
  @Post('sign-in')
  @HttpCode(200)
  signIn(
    @Body() body: SignInBody,
    @Attempt(['ip', 'body.email'], { policy: 'sign-in' }) attempt: Attempt,
  ): { user: string } {
    return this.auth.signIn(String(body?.email ?? ''), String(body?.password ?? ''), attempt);
  }

  /**
   * Admin unlock, answered only to this machine (the connection's own address, whatever headers
   * say): `{ "email": "ada@example.com", "ip": "127.0.0.1" }` gives the account, and the address,
   * their full sign-in budget again. Works with the in-memory store too, where no command can reach.
   */
  @Post('unlock')
  @HttpCode(200)
  async unlock(
    @Req() request: { socket?: { remoteAddress?: string } },
    @Body() body: { email?: unknown; ip?: unknown },
  ): Promise<{ unlocked: string[] }> {
    const peer = canonicalIp(request.socket?.remoteAddress);
    if (peer !== '127.0.0.1' && peer !== '0:0:0:0:0:0:0:1') {
      throw new ForbiddenException('unlock is answered only on this machine');
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
