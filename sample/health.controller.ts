import { Controller, Get } from '@nestjs/common';
import { RedlimitConnection, SkipThrottle } from '../lib/nest';

@Controller('health')
export class HealthController {
  constructor(private readonly limits: RedlimitConnection) {}

  /** Never rate-limited: load balancers poll it. */
  @Get()
  @SkipThrottle()
  health(): { status: 'ok'; rateLimitStore: string } {
    return { status: 'ok', rateLimitStore: this.limits.kind };
  }
}
