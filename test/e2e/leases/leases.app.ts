/** Fixture: routes under a concurrency policy (one lease in flight), held open until a test says. */
import { Controller, Get, Module, Param, StreamableFile, type Type } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import type { Redis } from 'ioredis';
import { Readable } from 'node:stream';
import { RedlimitGuard, RedlimitModule, Throttle } from '../../../lib/nest';

/** Named gates the handlers wait on, opened by the spec; and when each handler started. */
export class Gates {
  private readonly opened = new Map<string, () => void>();
  private readonly waits = new Map<string, Promise<void>>();
  private readonly entries = new Map<string, { promise: Promise<void>; resolve: () => void }>();

  /** Resolves when the handler of `id` has started. */
  entered(id: string): Promise<void> {
    return this.entry(id).promise;
  }

  /** Lets the handler of `id` go on. */
  open(id: string): void {
    void this.gate(id);
    this.opened.get(id)!();
  }

  /** What the handler of `id` awaits (marking it entered). */
  pass(id: string): Promise<void> {
    this.entry(id).resolve();
    return this.gate(id);
  }

  private gate(id: string): Promise<void> {
    let wait = this.waits.get(id);
    if (!wait) {
      wait = new Promise<void>((resolve) => this.opened.set(id, resolve));
      this.waits.set(id, wait);
    }
    return wait;
  }

  private entry(id: string) {
    let entry = this.entries.get(id);
    if (!entry) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      entry = { promise, resolve };
      this.entries.set(id, entry);
    }
    return entry;
  }
}

export const gates = new Gates();

const shared = () => 'shared';

@Controller('work')
@Throttle('slot', { key: shared })
class WorkController {
  @Get('quick')
  quick(): string {
    return 'quick';
  }

  @Get('slow/:id')
  async slow(@Param('id') id: string): Promise<string> {
    await gates.pass(id);
    return 'slow';
  }

  @Get('fail/:id')
  async fail(@Param('id') id: string): Promise<string> {
    await gates.pass(id);
    throw new Error('the handler failed');
  }

  /** Streams one chunk at once, the rest once the gate opens. */
  @Get('stream/:id')
  stream(@Param('id') id: string): StreamableFile {
    const body = new Readable({ read() {} });
    body.push('first;');
    void gates.pass(id).then(() => {
      body.push('last');
      body.push(null);
    });
    return new StreamableFile(body);
  }
}

export function leasesApp(client: Redis, prefix: string): Type {
  @Module({
    imports: [
      RedlimitModule.forRoot({
        redis: { client },
        prefix,
        policies: { slot: { algorithm: 'concurrency', limit: 1, window: '30s' } },
        defaultPolicy: 'slot',
      }),
    ],
    controllers: [WorkController],
    providers: [{ provide: APP_GUARD, useClass: RedlimitGuard }],
  })
  class LeasesAppModule {}
  return LeasesAppModule;
}
