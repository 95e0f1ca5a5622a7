/**
 * Fixture (adversarial review 3): concurrency leases on a handler that streams through `@Res()`
 * (Express `res.write`, Fastify `reply.hijack()` + `reply.raw`) and returns before the stream
 * ends: under @Throttle (the guard's lease) and under @Attempt (the attempt's lease). The stream
 * ends when the test opens the gate.
 */
import { Controller, Get, Module, Res, type Type } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { Attempt, MemoryStore, RedlimitGuard, RedlimitModule, Throttle } from '../../../lib/nest';
import { APP_GUARD } from '@nestjs/core';

/** Opened by the test: every stream waiting on it ends. */
export interface Gate {
  wait(): Promise<void>;
  open(): void;
}

export function gate(): Gate {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { wait: () => opened, open };
}

/** Express's response is a ServerResponse; Fastify's reply has `hijack()` and `raw`. */
type AnyResponse = ServerResponse | { hijack(): void; raw: ServerResponse };

function startStream(res: AnyResponse, streams: Gate): void {
  let raw: ServerResponse;
  if ('hijack' in res && typeof res.hijack === 'function') {
    res.hijack();
    raw = res.raw;
  } else {
    raw = res as ServerResponse;
  }
  raw.writeHead(200, { 'content-type': 'text/plain' });
  raw.write('first chunk\n');
  void streams.wait().then(() => raw.end('last chunk\n'));
}

export function attemptLeaseStreamApp(streams: Gate): Type {
  @Controller('stream')
  class StreamController {
    /** The guard's lease: held until the response is over (the control). */
    @Get('throttle')
    @Throttle('inflight')
    throttled(@Res() res: AnyResponse): void {
      startStream(res, streams);
    }

    /** The attempt's lease: released when the handler returns, while the stream goes on. */
    @Get('attempt')
    attempt(
      @Res() res: AnyResponse,
      @Attempt(['ip'], { policy: 'inflight' }) _attempt: Attempt,
    ): void {
      startStream(res, streams);
    }
  }

  @Module({
    imports: [
      RedlimitModule.forRoot({
        store: new MemoryStore(),
        policies: { inflight: { algorithm: 'concurrency', limit: 2, window: '10m' } },
      }),
    ],
    controllers: [StreamController],
    providers: [{ provide: APP_GUARD, useClass: RedlimitGuard }],
  })
  class AttemptLeaseStreamModule {}
  return AttemptLeaseStreamModule;
}
