/**
 * Fixture: the three layers of "Plans and tiers". A global per-IP limit for everyone (the default
 * policy, app-wide), a per-API-key limit by plan (chosen per request by a resolver provider with a
 * short cache), and a tight per-endpoint limit on an expensive operation, all as one decision.
 */
import {
  Controller,
  type ExecutionContext,
  Get,
  Injectable,
  Module,
  Post,
  type Type,
} from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import type { Redis } from 'ioredis';
import {
  type PolicyResolverService,
  RedlimitGuard,
  RedlimitModule,
  Throttle,
} from '../../../lib/nest';

export type Plan = 'anonymous' | 'free' | 'pro';

/** The plans "database", with a clock the test controls. */
export class PlanBook {
  readonly plans = new Map<string, Plan>();
  now = 0;
  lookups = 0;
}

/** Looks plans up at most once per key per `ttlMs` (so it is not a database query per request). */
@Injectable()
export class PlanPolicy implements PolicyResolverService {
  static readonly ttlMs = 30_000;
  private readonly cache = new Map<string, { plan: Plan; until: number }>();

  constructor(private readonly book: PlanBook) {}

  resolvePolicy(context: ExecutionContext): string {
    const headers = context
      .switchToHttp()
      .getRequest<{ headers: Record<string, string> }>().headers;
    const key = headers['x-api-key'];
    if (!key) return 'plan-anonymous';
    const cached = this.cache.get(key);
    if (cached && cached.until > this.book.now) return `plan-${cached.plan}`;
    this.book.lookups++;
    const plan = this.book.plans.get(key) ?? 'anonymous';
    this.cache.set(key, { plan, until: this.book.now + PlanPolicy.ttlMs });
    return `plan-${plan}`;
  }
}

@Controller('api')
@Throttle(PlanPolicy, { by: 'apiKey', scope: 'app' })
class ApiController {
  @Get('search')
  search(): string {
    return 'results';
  }

  @Post('export')
  @Throttle('export', { by: 'apiKey' })
  export(): string {
    return 'exported';
  }

  @Get('broken-plan')
  @Throttle(() => 'platinum', { override: true })
  broken(): string {
    return 'never';
  }

  @Get('dashboard')
  @Throttle('soft', { override: true })
  dashboard(): string {
    return 'ok';
  }
}

/** Two layers of one policy whose keys overlap: one part, each key charged once. */
@Controller('overlap')
class OverlapController {
  @Get()
  @Throttle('export', { key: () => ['tenant:acme', 'user:ada'] })
  @Throttle('export', { key: () => 'user:ada' })
  get(): string {
    return 'ok';
  }
}

/** A controller layer with override: the default per-IP policy does not apply here. */
@Controller('internal')
@Throttle('soft', { override: true })
class InternalController {
  @Get()
  get(): string {
    return 'ok';
  }
}

/** Limits of each layer, small so tests stay short. */
export const LIMITS = { ip: 5, anonymous: 2, free: 3, pro: 4, export: 2 } as const;

export function plansApp(client: Redis, prefix: string, book: PlanBook): Type {
  const window = '1m';
  const sliding = 'sliding-window' as const;
  @Module({
    imports: [
      RedlimitModule.forRoot({
        redis: { client },
        prefix,
        policies: {
          ip: { algorithm: sliding, limit: LIMITS.ip, window },
          'plan-anonymous': { algorithm: 'token-bucket', limit: LIMITS.anonymous, window },
          'plan-free': { algorithm: 'gcra', limit: LIMITS.free, window },
          'plan-pro': { algorithm: sliding, limit: LIMITS.pro, window },
          export: { algorithm: 'fixed-window', limit: LIMITS.export, window },
          soft: { algorithm: sliding, limit: 10, window, warnAt: 0.8 },
        },
        defaultPolicy: 'ip',
        defaultPolicyScope: 'app',
        clientIp: { trustedProxies: ['loopback'] }, // tests speak for many IPs
        apiKey: { validate: (key) => book.plans.has(key) }, // invented keys are charged by IP
      }),
    ],
    controllers: [ApiController, OverlapController, InternalController],
    providers: [
      { provide: PlanBook, useValue: book },
      PlanPolicy,
      { provide: APP_GUARD, useClass: RedlimitGuard },
    ],
  })
  class PlansAppModule {}
  return PlansAppModule;
}
