import { Registry } from 'prom-client';
import { DecisionEvents, prometheusMetrics } from '../../lib/nest';
import { RedlimitAccess } from '../../lib/nest/access/redlimit-access.service';

describe('denied and skipped decision events', () => {
  const caller = { clientAddress: () => undefined, apiKeyValue: () => undefined };

  it('are one consume event per policy (duplicates once), with no keys and no store latency', () => {
    const events = new DecisionEvents();
    const seen: unknown[] = [];
    events.on((e) => seen.push({ ...e }));
    const access = new RedlimitAccess({ deny: { ips: ['10.0.0.1'] } }, caller, events);
    access.report('denied', ['two', 'login', 'two']);
    access.report('skipped', ['login']);
    const event = (policy: string, outcome: string) => ({
      operation: 'consume',
      policy,
      outcome,
      latencyMs: 0,
      keyHashes: [],
    });
    expect(seen).toEqual([
      event('two', 'denied'),
      event('login', 'denied'),
      event('login', 'skipped'),
    ]);
  });

  it('are counted by the Prometheus metrics under their outcome', async () => {
    const events = new DecisionEvents();
    const registry = new Registry();
    const stop = prometheusMetrics(events, { registry });
    const access = new RedlimitAccess({ skipIf: () => true }, caller, events);
    access.report('denied', ['api']);
    access.report('skipped', ['api']);
    access.report('skipped', ['api']);
    const text = await registry.metrics();
    expect(text).toContain('redlimit_decisions_total{policy="api",outcome="denied"} 1');
    expect(text).toContain('redlimit_decisions_total{policy="api",outcome="skipped"} 2');
    stop();
  });

  it('are not built when nobody listens', () => {
    const access = new RedlimitAccess({ skipIf: () => true }, caller, new DecisionEvents());
    expect(() => access.report('skipped', ['api'])).not.toThrow();
    expect(() => new RedlimitAccess({}, caller).report('denied', ['api'])).not.toThrow();
  });
});
