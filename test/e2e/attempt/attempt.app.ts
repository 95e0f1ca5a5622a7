/** Fixture: sign-in routes guarded by @Attempt, a service that takes the attempt, a flaky store. */
import {
  BadRequestException,
  Body,
  type CanActivate,
  Controller,
  type ExecutionContext,
  HttpCode,
  Injectable,
  Module,
  Post,
  type Type,
  UnauthorizedException,
  UseGuards,
} from '@nestjs/common';
import type { Redis } from 'ioredis';
import {
  Attempt,
  AttemptInterceptor,
  RedisStore,
  RedlimitModule,
  type RefundRequest,
  type SpendRequest,
  type SpendResult,
  type Store,
} from '../../../lib/nest';

export const PASSWORD = 'correct horse battery staple';
const USERS = new Set(['alice@example.com']);

interface SignInBody {
  email?: string;
  password?: string;
}

/** Counts handler runs: a refused attempt must never reach the handler. */
export class Calls {
  count = 0;
}

/** A RedisStore whose refunds fail on demand, like a store that went down at settlement. */
export class FlakyStore implements Store {
  failRefunds = false;
  refunds = 0;
  constructor(private readonly inner: RedisStore) {}
  consume(request: SpendRequest): Promise<SpendResult> {
    return this.inner.consume(request);
  }
  peek(request: SpendRequest): Promise<SpendResult> {
    return this.inner.peek(request);
  }
  refund(request: RefundRequest): Promise<void> {
    this.refunds++;
    if (this.failRefunds) return Promise.reject(new Error('Connection is closed.'));
    return this.inner.refund(request);
  }
  reset(request: Parameters<Store['reset']>[0]): Promise<void> {
    return this.inner.reset(request);
  }
}

/** Stands in for an auth guard: `x-user` becomes `request.user.id` (guards run before interceptors). */
class FakeAuthGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context
      .switchToHttp()
      .getRequest<{ headers: Record<string, string>; user?: { id: string } }>();
    if (request.headers['x-user']) request.user = { id: request.headers['x-user'] };
    return true;
  }
}

@Injectable()
class AuthService {
  /** The attempt travels into the service, which decides whether it was legitimate. */
  verify(body: SignInBody, attempt: Attempt): { user: string } {
    const email = String(body.email ?? '')
      .trim()
      .toLowerCase();
    if (!USERS.has(email) || body.password !== PASSWORD) {
      throw new UnauthorizedException('Wrong email or password');
    }
    attempt.refund();
    return { user: email };
  }
}

/** An interceptor whose settlement-error hook itself throws (a careless subclass). */
export class ThrowingHookInterceptor extends AttemptInterceptor {
  protected override onSettleError(): void {
    throw new Error('the hook failed too');
  }
}

export function attemptApp(
  store: FlakyStore,
  calls: Calls,
  attemptInterceptor?: typeof AttemptInterceptor,
): Type {
  @Controller()
  class SignInController {
    constructor(private readonly auth: AuthService) {}

    @Post('sign-in')
    @HttpCode(200)
    signIn(
      @Body() body: SignInBody,
      @Attempt(['ip', 'email'], { policy: 'login' }) attempt: Attempt,
    ): { user: string } {
      calls.count++;
      return this.auth.verify(body, attempt);
    }

    /** refundOn: 'success' — only failures cost, without touching the attempt. */
    @Post('sign-in-on-success')
    @HttpCode(200)
    signInOnSuccess(
      @Body() body: SignInBody,
      @Attempt('email', { policy: 'login', refundOn: 'success' }) _attempt: Attempt,
    ): { ok: true } {
      calls.count++;
      if (body.password !== PASSWORD) throw new UnauthorizedException();
      return { ok: true };
    }

    @Post('refund-then-throw')
    refundThenThrow(@Attempt('email', { policy: 'login' }) attempt: Attempt): never {
      calls.count++;
      attempt.refund();
      throw new BadRequestException('the handler failed after deciding the attempt was free');
    }

    /** The handler settles the attempt itself; the interceptor must not settle it again. */
    @Post('settle-self')
    @HttpCode(200)
    async settleSelf(
      @Attempt('email', { policy: 'login', refundOn: 'success' }) attempt: Attempt,
    ): Promise<{ settled: boolean }> {
      calls.count++;
      attempt.refund();
      await attempt.settle();
      return { settled: attempt.settled };
    }

    /** The store goes down between the handler's refund() and the settlement. */
    @Post('refund-store-down')
    @HttpCode(200)
    refundStoreDown(@Attempt('email', { policy: 'login' }) attempt: Attempt): { ok: true } {
      calls.count++;
      attempt.refund();
      store.failRefunds = true;
      return { ok: true };
    }

    /** Keyed on request.user.id, set by an auth guard. */
    @Post('per-user')
    @HttpCode(200)
    @UseGuards(FakeAuthGuard)
    perUser(@Attempt('user', { policy: 'login' }) _attempt: Attempt): { ok: true } {
      calls.count++;
      return { ok: true };
    }

    /** A function part and a cost. */
    @Post('otp')
    @HttpCode(200)
    otp(
      @Attempt(
        [
          (ctx: ExecutionContext) =>
            ctx.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-phone'],
        ],
        {
          policy: 'login',
          cost: 5,
        },
      )
      attempt: Attempt,
    ): { remaining: number } {
      calls.count++;
      return { remaining: attempt.decision.remaining };
    }
  }

  @Module({
    imports: [
      RedlimitModule.forRoot({
        store,
        policies: { login: { algorithm: 'sliding-window', limit: 10, window: '15m' } },
        timeoutMs: 500,
        ...(attemptInterceptor && { attemptInterceptor }),
      }),
    ],
    controllers: [SignInController],
    providers: [AuthService],
  })
  class AttemptAppModule {}
  return AttemptAppModule;
}

export function flakyStore(client: Redis, prefix: string): FlakyStore {
  return new FlakyStore(new RedisStore({ client, prefix }));
}
