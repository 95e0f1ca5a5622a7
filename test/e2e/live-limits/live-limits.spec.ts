/**
 * Live limits through the Nest module: LimiterRegistry.override / clearOverride, the overrides in
 * force logged at startup and each change logged as it is applied, two app instances on one Redis
 * (one changes, the other applies within its poll), and a MemoryStore app (one process).
 */
import { Controller, Get, Module, type Type, UseGuards } from '@nestjs/common';
import { MemoryStore, PolicyOverrides, RedisStore, type Store } from '../../../lib';
import { LimiterRegistry, RedlimitGuard, RedlimitModule, Throttle } from '../../../lib/nest';
import { createTestClient, uniquePrefix } from '../../support/redis';
import { until } from '../../support/until';
import { PLATFORMS, type RunningApp, startApp } from '../support/app';

jest.setTimeout(60_000);

@Controller()
class ApiController {
  @Get('orders')
  @UseGuards(RedlimitGuard)
  @Throttle('api', (ctx) => {
    const req = ctx.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
    return `tenant:${req.headers['x-tenant'] ?? 'none'}:`;
  })
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
  class LiveAppModule {}
  return LiveAppModule;
}

async function statuses(app: RunningApp, tenant: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    out.push((await app.request('/orders', { headers: { 'x-tenant': tenant } })).status);
  }
  return out;
}

describe.each(PLATFORMS)('live limits in a Nest app on %s', (platform) => {
  it('two instances on one Redis: an override for a tenant made on one holds on the other within its poll; startup and changes are logged', async () => {
    const client = createTestClient();
    const prefix = uniquePrefix('live');
    // An override already stored before the apps start: logged at startup.
    const early = new PolicyOverrides(new RedisStore({ client, prefix }).overrides());
    const base = { name: 'api', algorithm: 'fixed-window', limit: 2, window: '1h' } as const;
    const { resolvePolicy } = await import('../../../lib/core/policy');
    await early.set(
      resolvePolicy(base),
      { limit: 3 },
      { scope: 'tenant:early:', actor: 'ada', reason: 'pilot' },
    );
    const a = await startApp(liveApp(new RedisStore({ client, prefix })), platform);
    const b = await startApp(liveApp(new RedisStore({ client, prefix })), platform);
    try {
      for (const app of [a, b]) {
        expect(app.logs.join('\n')).toContain(
          'live override in force: api for keys starting "tenant:early:": {"limit":3}',
        );
      }
      expect(await statuses(a, 'early', 4)).toEqual([200, 200, 200, 429]);

      const registry = a.app.get(LimiterRegistry);
      const set = await registry.override(
        'api',
        { limit: 5 },
        { scope: 'tenant:acme:', actor: 'ada', reason: 'launch' },
      );
      const other = b.app.get(LimiterRegistry);
      await until(() => other.liveLimits!.version >= set.version, 10_000);
      expect(await statuses(b, 'acme', 6)).toEqual([200, 200, 200, 200, 200, 429]);
      expect(await statuses(b, 'plain', 3)).toEqual([200, 200, 429]);
      await until(
        () => b.logs.some((l) => l.includes(`live limits at version ${set.version}`)),
        10_000,
      );

      // Validation before the store is touched, with the policy's messages.
      await expect(registry.override('api', { window: '1m' } as never)).rejects.toThrow(
        /window cannot change at runtime/,
      );
      await expect(registry.override('nope', { limit: 5 })).rejects.toThrow(
        /no policy named 'nope'/,
      );

      expect(await registry.clearOverride('api', { scope: 'tenant:acme:' })).toBe(true);
      const history = await registry.overrideHistory(5);
      expect(history.map((h) => [h.action, h.scope, h.actor])).toEqual([
        ['unset', 'tenant:acme:', 'code'],
        ['set', 'tenant:acme:', 'ada'],
        ['set', 'tenant:early:', 'ada'],
      ]);
    } finally {
      await a.close();
      await b.close();
      await client.quit();
    }
  });

  it('a MemoryStore app (one process): the override holds at once', async () => {
    const app = await startApp(liveApp(new MemoryStore()), platform);
    try {
      const registry = app.app.get(LimiterRegistry);
      await registry.override('api', { limit: 3 });
      expect(await statuses(app, 'x', 4)).toEqual([200, 200, 200, 429]);
      expect((await registry.listOverrides()).map((o) => o.change)).toEqual([{ limit: 3 }]);
    } finally {
      await app.close();
    }
  });
});
