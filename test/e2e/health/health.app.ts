/** Fixture: a Terminus health endpoint with RedlimitHealthIndicator next to RedlimitModule. */
import { Controller, Get, Module, type Type } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import {
  RedlimitHealthIndicator,
  RedlimitModule,
  type RedlimitModuleOptions,
} from '../../../lib/nest';

/** The check's bound in these apps. */
export const HEALTH_TIMEOUT_MS = 500;

@Controller()
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly redlimit: RedlimitHealthIndicator,
  ) {}

  @Get('health')
  @HealthCheck()
  check() {
    return this.health.check([
      () => this.redlimit.isHealthy('rate-limits', { timeoutMs: HEALTH_TIMEOUT_MS }),
    ]);
  }
}

/** An app whose health endpoint reports the store of a module configured with `options`. */
export function healthApp(options: RedlimitModuleOptions): Type {
  @Module({
    imports: [RedlimitModule.forRoot(options), TerminusModule.forRoot({ logger: false })],
    controllers: [HealthController],
    providers: [RedlimitHealthIndicator],
  })
  class HealthAppModule {}
  return HealthAppModule;
}
