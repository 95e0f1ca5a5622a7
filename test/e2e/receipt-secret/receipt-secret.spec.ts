/**
 * The module's `receiptSecret` reaches every limiter of the registry: receipts carry a MAC, and
 * one that was edited or forged is refused before the store is touched; `REDLIMIT_RECEIPT_SECRET`
 * sets it from the environment.
 */
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Receipt } from '../../../lib';
import {
  LimiterRegistry,
  RedlimitModule,
  type RedlimitModuleOptions,
  redlimitOptionsFromEnv,
} from '../../../lib/nest';
import { redisUrl, uniquePrefix } from '../../support/redis';

const SECRET = 'a receipt secret of 32 characters';
const policies = { api: { algorithm: 'fixed-window', limit: 5, window: '1m' } } as const;

async function registryWith(options: RedlimitModuleOptions) {
  @Module({ imports: [RedlimitModule.forRoot(options)] })
  class AppModule {}
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  return { app, registry: app.get(LimiterRegistry) };
}

describe.each([
  ['redis', () => ({ redis: redisUrl(), prefix: uniquePrefix('e2e-receipts') })],
  ['memory', () => ({})],
] as const)('receiptSecret on the %s store', (_name, store) => {
  it('signs receipts, and a forged one is refused while the real one refunds', async () => {
    const { app, registry } = await registryWith({ ...store(), policies, receiptSecret: SECRET });
    try {
      const limiter = registry.get('api');
      const decision = await limiter.consume('user:1', { cost: 2 });
      expect(decision.receipt.mac).toEqual(expect.any(String));
      const forged: Receipt = { ...decision.receipt, cost: 5 };
      await expect(limiter.refund(forged)).rejects.toThrow(/receipt/);
      expect((await limiter.peek('user:1')).remaining).toBe(2); // 5 − 2 spent − 1 peeked
      expect(await limiter.refund(decision.receipt)).toBe(true);
      expect((await limiter.peek('user:1')).remaining).toBe(4);
    } finally {
      await app.close();
    }
  });

  it('without it, receipts carry no MAC', async () => {
    const { app, registry } = await registryWith({ ...store(), policies });
    try {
      expect((await registry.get('api').consume('user:1')).receipt.mac).toBeUndefined();
    } finally {
      await app.close();
    }
  });
});

describe('REDLIMIT_RECEIPT_SECRET', () => {
  it('sets receiptSecret; a short or blank one is refused without showing it', () => {
    expect(redlimitOptionsFromEnv({ REDLIMIT_RECEIPT_SECRET: SECRET }).receiptSecret).toBe(SECRET);
    expect(() => redlimitOptionsFromEnv({ REDLIMIT_RECEIPT_SECRET: 'short-one' })).toThrow(
      /REDLIMIT_RECEIPT_SECRET.*at least 16 characters/,
    );
    expect(() => redlimitOptionsFromEnv({ REDLIMIT_RECEIPT_SECRET: 'short-one' })).not.toThrow(
      /short-one/,
    );
    expect(() => redlimitOptionsFromEnv({ REDLIMIT_RECEIPT_SECRET: ' ' })).toThrow(
      /empty or blank/,
    );
  });
});
