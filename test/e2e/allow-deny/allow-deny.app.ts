/**
 * Fixture: the module's allow and deny lists and skipIf, in front of @Throttle routes (guard per
 * controller and as APP_GUARD) and an @Attempt route. Clients are named by X-Forwarded-For from
 * a trusted loopback proxy, so one test process can be many addresses.
 */
import {
  Controller,
  type ExecutionContext,
  Get,
  HttpCode,
  Module,
  Post,
  type Type,
  UseGuards,
} from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import type { Redis } from 'ioredis';
import {
  Attempt,
  type DecisionEvent,
  RedlimitGuard,
  RedlimitModule,
  type RedlimitModuleOptions,
  redlimitOptionsFromEnv,
  SkipThrottle,
  Throttle,
} from '../../../lib/nest';

/** What the handlers and skipIf saw. */
export class Seen {
  handled = 0;
  skipIfCalls = 0;
  readonly events: DecisionEvent[] = [];
  /** The attempts the @Attempt handler received: spent or not, and whether refund() threw. */
  readonly attempts: Array<{ spent: boolean; cost: number; refundThrew: boolean }> = [];
}

type Headers = Record<string, string | undefined>;
const header = (ctx: ExecutionContext, name: string) =>
  ctx.switchToHttp().getRequest<{ headers: Headers }>().headers[name];

export const LISTS = {
  allow: {
    ips: ['198.51.100.0/24', '2001:db8:600d::1', '203.0.113.9'],
    apiKeys: ['allow-key-0123456789'],
    userAgents: ['monitor/1.0', /^Probe\//],
  },
  deny: {
    ips: ['203.0.113.0/24', '2001:db8:bad::/48'],
    apiKeys: ['deny-key-0123456789'],
    userAgents: [/^BadBot\//],
  },
} satisfies Pick<RedlimitModuleOptions, 'allow' | 'deny'>;

export function allowDenyApp(
  client: Redis,
  prefix: string,
  seen: Seen,
  options: { trustLoopback?: boolean } = {},
): Type {
  @Controller('items')
  @UseGuards(RedlimitGuard)
  @Throttle('two')
  class ItemsController {
    @Get()
    list(): string {
      seen.handled++;
      return 'items';
    }

    @Get('free')
    @SkipThrottle()
    free(): string {
      seen.handled++;
      return 'free';
    }
  }

  @Controller('session')
  class SessionController {
    /** @Attempt alone (the global guard has no default policy to add). */
    @Post()
    @HttpCode(200)
    signIn(@Attempt('ip', { policy: 'login' }) attempt: Attempt): string {
      seen.handled++;
      let refundThrew = false;
      try {
        attempt.refund();
      } catch {
        refundThrew = true;
      }
      const { receipt } = attempt.decision;
      seen.attempts.push({ spent: receipt.spent, cost: receipt.cost, refundThrew });
      return 'signed in';
    }

    /** @Throttle and @Attempt on one handler: two policies the call would be charged under. */
    @Post('both')
    @HttpCode(200)
    @Throttle('two')
    both(@Attempt('ip', { policy: 'login' }) _attempt: Attempt): string {
      seen.handled++;
      return 'both';
    }
  }

  @Module({
    imports: [
      RedlimitModule.forRoot({
        redis: { client },
        prefix,
        policies: {
          two: { algorithm: 'fixed-window', limit: 2, window: '1h' },
          login: { algorithm: 'fixed-window', limit: 2, window: '1h' },
        },
        ...(options.trustLoopback !== false && { clientIp: { trustedProxies: ['loopback'] } }),
        ...LISTS,
        skipIf: (ctx) => {
          seen.skipIfCalls++;
          if (header(ctx, 'x-skip-sync') === 'yes') return true;
          return Promise.resolve(header(ctx, 'x-skip-async') === 'yes');
        },
        onDecision: (event) => seen.events.push(event),
      }),
    ],
    controllers: [ItemsController, SessionController],
    providers: [{ provide: APP_GUARD, useClass: RedlimitGuard }],
  })
  class AllowDenyAppModule {}
  return AllowDenyAppModule;
}

/** The module through forRootAsync, its deny list from REDLIMIT_DENY_IPS. */
export function envListsApp(client: Redis, prefix: string, env: Record<string, string>): Type {
  @Controller('items')
  @UseGuards(RedlimitGuard)
  @Throttle('two')
  class EnvItemsController {
    @Get()
    list(): string {
      return 'items';
    }
  }

  @Module({
    imports: [
      RedlimitModule.forRootAsync({
        useFactory: () =>
          redlimitOptionsFromEnv(env, {
            redis: { client },
            prefix,
            policies: { two: { algorithm: 'fixed-window', limit: 2, window: '1h' } },
          }),
      }),
    ],
    controllers: [EnvItemsController],
  })
  class EnvListsAppModule {}
  return EnvListsAppModule;
}

/** A module whose options the spec chooses, to see them refused at boot. */
export function optionsApp(options: RedlimitModuleOptions): Type {
  @Module({ imports: [RedlimitModule.forRoot(options)] })
  class OptionsAppModule {}
  return OptionsAppModule;
}
