/** Fixture: routes under @Throttle, with the guard per controller and as APP_GUARD. */
import { All, Controller, Get, Module, Param, Post, type Type, UseGuards } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import type { Redis } from 'ioredis';
import {
  RedisStore,
  RedlimitGuard,
  RedlimitModule,
  SkipThrottle,
  Throttle,
} from '../../../lib/nest';

const apiKey = (ctx: import('@nestjs/common').ExecutionContext): string =>
  `key:${String(ctx.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-api-key'])}`;

@Controller('shared')
@UseGuards(RedlimitGuard)
@Throttle('two')
class SharedPolicyController {
  @Get('a')
  a(): string {
    return 'a';
  }

  @Get('b')
  b(): string {
    return 'b';
  }

  @Get('items/:id')
  item(@Param('id') id: string): { id: string } {
    return { id };
  }

  /** The handler's layer replaces the controller's (and the default policy). */
  @Get('roomy')
  @Throttle('five', { override: true })
  roomy(): string {
    return 'roomy';
  }

  /** Stacked: default 'three' + controller 'two' + handler 'five', one decision. */
  @Get('stacked')
  @Throttle('five')
  stacked(): string {
    return 'stacked';
  }

  @Get('free')
  @SkipThrottle()
  free(): string {
    return 'free';
  }
}

@Controller('keys')
@UseGuards(RedlimitGuard)
class KeyedController {
  @Get('api-key')
  @Throttle('two', apiKey)
  byApiKey(): string {
    return 'ok';
  }

  /** Two keys, one decision: the tenant's and the caller's budget. */
  @Get('tenant/:tenant')
  @Throttle('two', (ctx) => {
    const req = ctx.switchToHttp().getRequest<{ params: { tenant: string } }>();
    return [`tenant:${req.params.tenant}`, apiKey(ctx)];
  })
  byTenant(): string {
    return 'ok';
  }
}

/** Handler runs per route of AnyMethodController. */
export const handled = { any: 0, read: 0, write: 0 };

@Controller('any')
class AnyMethodController {
  /** One handler for every method: one budget, whatever the method. */
  @All()
  @Throttle('two', { override: true })
  any(): string {
    handled.any++;
    return 'any';
  }

  /** Two handlers on one path: a budget each. */
  @Get('same')
  @Throttle('two', { override: true })
  read(): string {
    handled.read++;
    return 'read';
  }

  @Post('same')
  @Throttle('two', { override: true })
  write(): string {
    handled.write++;
    return 'write';
  }
}

/** No guard here: only the APP_GUARD (defaultPolicy) applies. */
@Controller('global')
class GlobalController {
  @Get('default')
  byDefault(): string {
    return 'default';
  }

  @Post('burst')
  @Throttle('five', { override: true })
  burst(): string {
    return 'burst';
  }

  /** Charged what the `x-units` header asks for (a function of the call's context). */
  @Post('units')
  @Throttle('five', {
    override: true,
    cost: (ctx) =>
      Promise.resolve(
        Number(
          ctx.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-units'],
        ),
      ),
  })
  units(): string {
    return 'units';
  }

  @Get('health')
  @SkipThrottle()
  health(): string {
    return 'ok';
  }
}

@Controller('skipped')
@SkipThrottle()
class SkippedController {
  @Get()
  skipped(): string {
    return 'skipped';
  }

  @Get('but-this')
  @Throttle('two')
  notSkipped(): string {
    return 'throttled';
  }
}

/** The same policy on the controller and the handler: one decision at the higher cost. */
@Controller('merged')
@Throttle('ten', { cost: 4 })
class MergedCostController {
  @Get()
  @Throttle('ten', { cost: 1 })
  merged(): string {
    return 'merged';
  }
}

export function throttleApp(
  client: Redis,
  prefix: string,
  headers?: 'ietf' | 'legacy' | 'both' | false,
  clock?: () => number,
): Type {
  @Module({
    imports: [
      RedlimitModule.forRoot({
        // With a clock, a store of its own on that clock: waits are known to the millisecond.
        ...(clock
          ? { store: new RedisStore({ client, prefix, clock }) }
          : { redis: { client }, prefix }),
        ...(headers !== undefined && { headers }),
        policies: {
          two: { algorithm: 'sliding-window', limit: 2, window: '1m' },
          five: { algorithm: 'sliding-window', limit: 5, window: '1m' },
          three: { algorithm: 'sliding-window', limit: 3, window: '1m' },
          ten: { algorithm: 'sliding-window', limit: 10, window: '1m' },
        },
        defaultPolicy: 'three',
      }),
    ],
    controllers: [
      SharedPolicyController,
      KeyedController,
      GlobalController,
      SkippedController,
      AnyMethodController,
      MergedCostController,
    ],
    providers: [{ provide: APP_GUARD, useClass: RedlimitGuard }],
  })
  class ThrottleAppModule {}
  return ThrottleAppModule;
}
