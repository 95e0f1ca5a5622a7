import { Limiter } from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { backends } from '../support/backends';
import { createTestClient, spawnNodeWorkers, uniquePrefix, warmPool } from '../support/redis';

const stores = backends('concurrency');

describe.each(stores)('$name store: concurrent spends', (backend) => {
  describe.each(ALGORITHMS)('%s', (algorithm) => {
    it('admits exactly 5 of 50 concurrent consumes at limit 5', async () => {
      const limiter = new Limiter(backend.store(), {
        name: 'race',
        algorithm,
        limit: 5,
        window: '1h',
      });
      const decisions = await Promise.all(
        Array.from({ length: 50 }, () => limiter.consume('caller')),
      );
      expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
      expect((await limiter.peek('caller')).remaining).toBe(0);
    });

    it('admits exactly 4 of 30 concurrent two-key consumes at limit 4', async () => {
      const limiter = new Limiter(backend.store(), {
        name: 'pair',
        algorithm,
        limit: 4,
        window: '1h',
      });
      const decisions = await Promise.all(
        Array.from({ length: 30 }, () => limiter.consume(['ip:198.51.100.1', 'email:a'])),
      );
      expect(decisions.filter((d) => d.allowed)).toHaveLength(4);
      expect((await limiter.peek('ip:198.51.100.1')).remaining).toBe(0);
      expect((await limiter.peek('email:a')).remaining).toBe(0);
    });

    it('runs exactly 10 bodies of 100 concurrent attempts at limit 10', async () => {
      const limiter = new Limiter(backend.store(), {
        name: 'bodies',
        algorithm,
        limit: 10,
        window: '1h',
      });
      let ran = 0;
      const outcomes = await Promise.allSettled(
        Array.from({ length: 100 }, () => limiter.attempt('caller', () => void ran++)),
      );
      expect(ran).toBe(10);
      expect(outcomes.filter((o) => o.status === 'rejected')).toHaveLength(90);
    });
  });
});

describe('redis store across processes', () => {
  it.each(ALGORITHMS)(
    '%s: 4 processes with their own connections, 400 attempts at limit 100 → exactly 100',
    async (algorithm) => {
      const outputs = await spawnNodeWorkers('test/integration/fixtures/race-worker.ts', 4, {
        RACE_PREFIX: uniquePrefix('processes'),
        RACE_ALGORITHM: algorithm,
        RACE_ATTEMPTS: '100',
        RACE_LIMIT: '100',
      });
      const allowed = outputs.reduce((sum, out) => sum + Number(out), 0);
      expect(allowed).toBe(100);
    },
  );
});

describe('the race test can fail', () => {
  it('lets a naive GET-then-INCR limiter admit more than the limit', async () => {
    const client = createTestClient();
    try {
      await warmPool(client);
      const key = `${uniquePrefix('naive')}caller`;
      const naive = async (): Promise<boolean> => {
        const current = Number((await client.get(key)) ?? 0); // read
        if (current >= 5) return false; // decide
        await client.incr(key); // write, too late
        return true;
      };
      const admitted = (await Promise.all(Array.from({ length: 50 }, naive))).filter(Boolean);
      expect(admitted.length).toBeGreaterThan(5);
      await client.del(key);
    } finally {
      await client.quit();
    }
  });
});
