/**
 * Fixture: handlers under `concurrency` policies (through @Throttle and through @Attempt) whose
 * work is a promise the spec settles, counted while in flight; and routes without a concurrency
 * policy, which must carry no lease interceptor.
 */
import {
  type CanActivate,
  Controller,
  ForbiddenException,
  Get,
  Module,
  type MessageEvent,
  Req,
  Sse,
  type Type,
  UseGuards,
} from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import type { Redis } from 'ioredis';
import { from, NEVER, type Observable, startWith } from 'rxjs';
import { Attempt, RedlimitGuard, RedlimitModule, Throttle } from '../../../lib/nest';

/** The work of the handlers: promises the spec settles, and how many are in flight. */
export class Work {
  inFlight = 0;
  maxInFlight = 0;
  entered = 0;
  /** Connections the server saw close, by handler entry. */
  closed = 0;
  private readonly pending: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
  private readonly waiters: Array<() => void> = [];

  /** Starts one unit of work for a request: in flight until the spec settles it. */
  start(request: unknown): Promise<string> {
    this.entered++;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    const raw = (request as { raw?: { socket?: NodeJS.EventEmitter } }).raw ?? request;
    (raw as { socket?: NodeJS.EventEmitter }).socket?.once('close', () => {
      this.closed++;
      this.notify();
    });
    const work = new Promise<void>((resolve, reject) => this.pending.push({ resolve, reject }));
    this.notify();
    return work.then(
      () => {
        this.inFlight--;
        this.notify();
        return 'done';
      },
      (error: unknown) => {
        this.inFlight--;
        this.notify();
        throw error;
      },
    );
  }

  /** Resolves once `predicate` holds. */
  until(predicate: (work: Work) => boolean): Promise<void> {
    if (predicate(this)) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (predicate(this)) resolve();
        else this.waiters.push(check);
      };
      this.waiters.push(check);
    });
  }

  /** Lets every unit of work in flight finish (or fail with `error`). */
  settleAll(error?: Error): void {
    for (const { resolve, reject } of this.pending.splice(0)) {
      if (error) reject(error);
      else resolve();
    }
  }

  private notify(): void {
    for (const check of this.waiters.splice(0)) check();
  }
}

const shared = () => 'shared';

/** A guard after RedlimitGuard that refuses: the handler is never reached. */
class DenyGuard implements CanActivate {
  canActivate(): boolean {
    throw new ForbiddenException();
  }
}

export function leaseHoldApp(
  client: Redis,
  prefix: string,
  work: Work,
): { module: Type; controller: Type } {
  @Controller()
  class WorkController {
    /** An async handler: its work is the promise it awaits. */
    @Get('throttle/promise')
    @Throttle('conc', { key: shared })
    async promise(@Req() request: unknown): Promise<string> {
      return work.start(request);
    }

    /** Returns an Observable over its work: Nest tears it down when the client leaves. */
    @Get('throttle/observable')
    @Throttle('conc-short', { key: shared })
    observable(@Req() request: unknown): Observable<string> {
      return from(work.start(request));
    }

    /** A server-sent event stream that never ends on its own. */
    @Sse('throttle/sse')
    @Throttle('conc-short', { key: shared })
    sse(@Req() request: unknown): Observable<MessageEvent> {
      void work.start(request);
      return NEVER.pipe(startWith({ data: 'hello' }));
    }

    /** Shares the budget of the routes above (same policy and key): free when a lease is. */
    @Get('throttle/quick')
    @Throttle('conc', { key: shared })
    quick(): string {
      return 'quick';
    }

    /** Leased by the global guard, then refused by a later one. */
    @Get('throttle/denied')
    @Throttle('conc', { key: shared })
    @UseGuards(DenyGuard)
    denied(@Req() request: unknown): Promise<string> {
      return work.start(request);
    }

    @Get('throttle/quick-short')
    @Throttle('conc-short', { key: shared })
    quickShort(): string {
      return 'quick';
    }

    @Get('attempt/promise')
    async attemptPromise(
      @Req() request: unknown,
      @Attempt('ip', { policy: 'conc' }) _attempt: Attempt,
    ): Promise<string> {
      return work.start(request);
    }

    @Get('attempt/observable')
    attemptObservable(
      @Req() request: unknown,
      @Attempt('ip', { policy: 'conc-short' }) _attempt: Attempt,
    ): Observable<string> {
      return from(work.start(request));
    }

    @Get('attempt/quick')
    attemptQuick(@Attempt('ip', { policy: 'conc' }) _attempt: Attempt): string {
      return 'quick';
    }

    @Get('attempt/quick-short')
    attemptQuickShort(@Attempt('ip', { policy: 'conc-short' }) _attempt: Attempt): string {
      return 'quick';
    }

    /** Only successes are free: the outcome must be the handler's own, whenever it ends. */
    @Get('attempt/rate/promise')
    async attemptRatePromise(
      @Req() request: unknown,
      @Attempt('ip', { policy: 'tries', refundOn: 'success' }) _attempt: Attempt,
    ): Promise<string> {
      return work.start(request);
    }

    @Get('attempt/rate/observable')
    attemptRateObservable(
      @Req() request: unknown,
      @Attempt('ip', { policy: 'tries', refundOn: 'success' }) _attempt: Attempt,
    ): Observable<string> {
      return from(work.start(request));
    }

    /** Under a rate policy only: no lease, so no interceptor. */
    @Get('rate')
    @Throttle('rate')
    rate(): string {
      return 'rate';
    }

    /** Under nothing at all. */
    @Get('plain')
    plain(): string {
      return 'plain';
    }
  }

  @Module({
    imports: [
      RedlimitModule.forRoot({
        redis: { client },
        prefix,
        policies: {
          conc: { algorithm: 'concurrency', limit: 2, window: '30s' },
          'conc-short': { algorithm: 'concurrency', limit: 2, window: '3s' },
          rate: { algorithm: 'sliding-window', limit: 100, window: '1m' },
          tries: { algorithm: 'fixed-window', limit: 2, window: '15m' },
        },
      }),
    ],
    controllers: [WorkController],
    providers: [{ provide: APP_GUARD, useClass: RedlimitGuard }],
  })
  class LeaseHoldAppModule {}
  return { module: LeaseHoldAppModule, controller: WorkController };
}
