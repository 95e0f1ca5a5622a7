/**
 * Fixture: RedlimitModule with `metrics` and `onDecision`, a @Throttle route, an @Attempt sign-in,
 * and a provider that subscribes to the injected RedlimitEvents.
 */
import {
  Body,
  Controller,
  Get,
  HttpCode,
  Injectable,
  Module,
  type OnModuleInit,
  Post,
  type Type,
  UnauthorizedException,
  UseGuards,
} from '@nestjs/common';
import {
  Attempt,
  type DecisionEvent,
  RedlimitEvents,
  RedlimitGuard,
  RedlimitModule,
  type RedlimitModuleOptions,
  Throttle,
} from '../../../lib/nest';

/** What the injected-events subscriber saw. */
export class SeenEvents {
  readonly events: DecisionEvent[] = [];
}

@Injectable()
class EventsSubscriber implements OnModuleInit {
  constructor(
    private readonly events: RedlimitEvents,
    private readonly seen: SeenEvents,
  ) {}

  onModuleInit(): void {
    this.events.on((event) => this.seen.events.push(event));
  }
}

@Controller()
class MetricsController {
  @Get('items')
  @UseGuards(RedlimitGuard)
  @Throttle('two')
  items(): string[] {
    return ['a', 'b'];
  }

  @Post('sign-in')
  @HttpCode(200)
  signIn(
    @Body() body: { password?: string },
    @Attempt(['ip', 'email'], { policy: 'login' }) attempt: Attempt,
  ): { ok: true } {
    if (body.password !== 'right') throw new UnauthorizedException();
    attempt.refund();
    return { ok: true };
  }
}

export function metricsApp(
  options: Pick<RedlimitModuleOptions, 'redis' | 'prefix' | 'metrics' | 'onDecision'>,
  seen: SeenEvents,
): Type {
  @Module({
    imports: [
      RedlimitModule.forRoot({
        ...options,
        timeoutMs: 300,
        onStoreFailure: () => undefined,
        policies: {
          two: { algorithm: 'sliding-window', limit: 2, window: '1m' },
          login: { algorithm: 'fixed-window', limit: 3, window: '15m' },
        },
      }),
    ],
    controllers: [MetricsController],
    providers: [{ provide: SeenEvents, useValue: seen }, EventsSubscriber],
  })
  class MetricsAppModule {}
  return MetricsAppModule;
}
