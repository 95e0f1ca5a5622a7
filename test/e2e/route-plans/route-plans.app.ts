/**
 * Fixture: a guard subclass overriding every protected hook, and routes where the guard and the
 * `@Attempt` interceptor both key on the client IP.
 */
import {
  Controller,
  type ExecutionContext,
  Get,
  Injectable,
  Module,
  type Type,
  UseGuards,
} from '@nestjs/common';
import {
  Attempt,
  type Attempt as AttemptType,
  type Limiter,
  MemoryStore,
  RedlimitGuard,
  RedlimitModule,
  Throttle,
  type ThrottleMetadata,
} from '../../../lib/nest';

type Headers = Record<string, string | undefined>;
const headersOf = (context: ExecutionContext): Headers =>
  context.switchToHttp().getRequest<{ headers: Headers }>().headers;

/** Every hook overridden: tracked by `x-user`, keyed per user, skipped on `x-skip`, plus a layer. */
@Injectable()
export class HookedGuard extends RedlimitGuard {
  protected override getTracker(context: ExecutionContext): Promise<string> {
    return Promise.resolve(headersOf(context)['x-user'] ?? 'nobody');
  }

  protected override generateKeys(
    context: ExecutionContext,
    tracker: string,
    limiter: Limiter,
  ): string {
    return `hooked:${limiter.policy.name}:${tracker}`;
  }

  protected override shouldSkip(context: ExecutionContext): boolean {
    return headersOf(context)['x-skip'] === 'yes';
  }

  protected override throttlesFor(context: ExecutionContext): readonly ThrottleMetadata[] {
    const declared = super.throttlesFor(context);
    return headersOf(context)['x-extra'] === 'yes' ? [...declared, { policy: 'one' }] : declared;
  }
}

@Controller('hooked')
@UseGuards(HookedGuard)
class HookedController {
  @Get()
  @Throttle('two')
  get(): string {
    return 'ok';
  }
}

@Controller('both')
@UseGuards(RedlimitGuard)
class BothController {
  /** The guard's layer and the attempt both key on the client IP. */
  @Get()
  @Throttle('five')
  get(@Attempt('ip', { policy: 'five' }) attempt: AttemptType): string {
    return attempt.decision.allowed ? 'ok' : 'no';
  }
}

/** Its metadata is rewritten by a spec after its plan was compiled. */
@Controller('patched')
@UseGuards(RedlimitGuard)
export class PatchedController {
  @Get()
  @Throttle('one')
  get(): string {
    return 'ok';
  }
}

export function routePlansApp(store: MemoryStore): Type {
  @Module({
    imports: [
      RedlimitModule.forRoot({
        store,
        policies: {
          one: { algorithm: 'fixed-window', limit: 1, window: '1m' },
          two: { algorithm: 'fixed-window', limit: 2, window: '1m' },
          five: { algorithm: 'fixed-window', limit: 5, window: '1m' },
        },
      }),
    ],
    controllers: [HookedController, BothController, PatchedController],
  })
  class RoutePlansAppModule {}
  return RoutePlansAppModule;
}
