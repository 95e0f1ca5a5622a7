/**
 * Adversarial review of live limits through the Nest module: what a stored override the app cannot
 * use does to startup (docs/live-limits.md: "ignored with a warning, never an error").
 */
import { Controller, Get, Module, type Type, UseGuards } from '@nestjs/common';
import { RedisStore, type Store } from '../../../lib';
import { RedlimitGuard, RedlimitModule, Throttle } from '../../../lib/nest';
import { createTestClient, uniquePrefix } from '../../support/redis';
import { type RunningApp, startApp } from '../support/app';

jest.setTimeout(60_000);

@Controller()
class ApiController {
  @Get('orders')
  @UseGuards(RedlimitGuard)
  @Throttle('api', () => 'tenant:x:')
  orders(): { ok: true } {
    return { ok: true };
  }
}

function liveApp(store: Store): Type {
  @Module({
    imports: [
      RedlimitModule.forRoot({
        store,
        overridesPollMs: 50,
        policies: { api: { algorithm: 'fixed-window', limit: 2, window: '1h' } },
      }),
    ],
    controllers: [ApiController],
  })
  class ReviewLiveAppModule {}
  return ReviewLiveAppModule;
}

describe('review: live limits in a Nest app', () => {
  it('a stored override whose change nests deeply (corrupt or crafted) does not keep the app from starting', async () => {
    const client = createTestClient();
    const prefix = uniquePrefix('review-live');
    const nested = '['.repeat(20_000) + ']'.repeat(20_000);
    // parseOverride accepts any object as the change; it is "in force" (no from/until), so the
    // startup log JSON.stringify()s it: Maximum call stack size exceeded, out of onModuleInit.
    await client.hset(
      `${prefix}{overrides}:set`,
      'api\nz:',
      `1:0::{"f":1,"policy":"api","scope":"z:","change":{"block":${nested}},"actor":"x"}`,
    );
    await client.set(`${prefix}{overrides}:version`, 1);
    let app: RunningApp | undefined;
    try {
      app = await startApp(liveApp(new RedisStore({ client, prefix })), 'express');
      const res = await app.request('/orders');
      expect(res.status).toBe(200);
    } finally {
      await app?.close();
      client.disconnect();
    }
  });
});
