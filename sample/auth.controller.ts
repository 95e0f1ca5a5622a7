import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { Attempt } from '../lib/nest';
import { AuthService } from './auth.service';

interface SignInBody {
  email?: string;
  password?: string;
}

@Controller('auth')
export class AuthController {
  constructor(private readonly auth: AuthService) {}

  /**
   * Five wrong passwords per 15 minutes per IP and per account (one decision charges both); a
   * right password is refunded, so only failures cost. The 6th failure — or any sign-in after
   * it, right password or not — gets 429 before this method runs.
   */
  @Post('sign-in')
  @HttpCode(200)
  signIn(
    @Body() body: SignInBody,
    @Attempt(['ip', 'email'], { policy: 'sign-in' }) attempt: Attempt,
  ): { user: string } {
    return this.auth.signIn(String(body?.email ?? ''), String(body?.password ?? ''), attempt);
  }
}
