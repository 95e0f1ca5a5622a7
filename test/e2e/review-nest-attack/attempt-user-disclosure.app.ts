/**
 * Fixture (adversarial review 3): `@Attempt(['user'])` and `@Attempt(['ip', 'user'])` on a route
 * a caller may reach signed out (optional auth). Without a user the 'user' part is 'user:-', one
 * budget shared by every signed-out caller, yet 'user' counts as a part that is the requester's
 * own, so the headers show that shared budget.
 */
import { Controller, Module, Post, type Type } from '@nestjs/common';
import { Attempt, MemoryStore, RedlimitModule } from '../../../lib/nest';

export function attemptUserDisclosureApp(): Type {
  @Controller()
  class ReportController {
    @Post('report')
    report(@Attempt(['user'], { policy: 'report' }) _attempt: Attempt): string {
      return 'ok';
    }

    @Post('report-ip-user')
    reportIpUser(@Attempt(['ip', 'user'], { policy: 'report' }) _attempt: Attempt): string {
      return 'ok';
    }
  }

  @Module({
    imports: [
      RedlimitModule.forRoot({
        store: new MemoryStore(),
        headers: 'both',
        // Clients told apart by X-Forwarded-For from the test's loopback "proxy".
        clientIp: { trustedProxies: ['loopback'] },
        policies: { report: { algorithm: 'fixed-window', limit: 5, window: '1h' } },
      }),
    ],
    controllers: [ReportController],
  })
  class AttemptUserDisclosureAppModule {}
  return AttemptUserDisclosureAppModule;
}
