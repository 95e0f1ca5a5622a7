import { Injectable, UnauthorizedException } from '@nestjs/common';
import type { Attempt } from '../lib/nest';

/** Demo accounts (a real app would check a password hash). */
const USERS: ReadonlyMap<string, string> = new Map([
  ['ada@example.com', 'correct horse battery staple'],
  ['grace@example.com', 'cobol forever'],
]);

@Injectable()
export class AuthService {
  /**
   * Checks the credentials; a right password hands the attempt back (only failures cost).
   * The attempt came from the controller's `@Attempt` parameter.
   */
  signIn(email: string, password: string, attempt: Attempt): { user: string } {
    const user = email.trim().toLowerCase();
    if (USERS.get(user) !== password) {
      throw new UnauthorizedException('Wrong email or password'); // the attempt keeps its cost
    }
    attempt.refund();
    return { user };
  }
}
