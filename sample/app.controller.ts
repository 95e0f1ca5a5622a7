import { createHash } from 'node:crypto';
import {
  Body,
  Controller,
  Get,
  HttpCode,
  Inject,
  Ip,
  Post,
  Query,
  UnauthorizedException,
} from '@nestjs/common';
import { Limiter, RateLimitedError } from '../lib';
import { SEARCH_LIMITER, SIGN_IN_LIMITER } from './limits';

const USERS: Record<string, string> = { 'ada@example.com': 'correct horse battery staple' };

/** Emails are normalised and hashed: no plain-text PII in Redis. */
const emailKey = (email: string): string =>
  `email:${createHash('sha256').update(email.trim().toLowerCase()).digest('hex').slice(0, 32)}`;

@Controller()
export class AppController {
  constructor(
    @Inject(SIGN_IN_LIMITER) private readonly signIn: Limiter,
    @Inject(SEARCH_LIMITER) private readonly search: Limiter,
  ) {}

  /** Only failures cost: a right password refunds the attempt. */
  @Post('sign-in')
  @HttpCode(200)
  async signInRoute(
    @Ip() ip: string,
    @Body() body: { email?: string; password?: string },
  ): Promise<{ user: string }> {
    const email = String(body?.email ?? '');
    return this.signIn.attempt([`ip:${ip}`, emailKey(email)], (attempt) => {
      if (USERS[email.trim().toLowerCase()] !== body?.password) {
        throw new UnauthorizedException('Wrong email or password'); // the attempt keeps its cost
      }
      attempt.refund();
      return { user: email };
    });
  }

  @Get('search')
  async searchRoute(
    @Ip() ip: string,
    @Query('q') q = '',
  ): Promise<{ q: string; remaining: number }> {
    const decision = await this.search.consume(`GET /search:ip:${ip}`);
    if (!decision.allowed) throw new RateLimitedError(decision);
    return { q, remaining: decision.remaining };
  }
}
