import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Receipt } from './decision';

/**
 * Signs and checks receipts with a limiter's `receiptSecret`. The secret lives in this closure
 * only: neither `JSON.stringify` nor `util.inspect` of the limiter shows it.
 */
export interface ReceiptSigner {
  /** The mac of a spent receipt. */
  sign(receipt: Receipt): string;
  /** Whether a receipt carries the mac its fields give (compared in constant time). */
  verify(receipt: Receipt): boolean;
}

/** Fallback receipts (`failMode: 'memory'`) name this process: its own memory charged them. */
const PROCESS_TAG = randomBytes(12).toString('base64url');

/**
 * A signer for receipts of one store: `scope` (a `RedisStore`'s prefix) is signed too, so a receipt
 * of one store never refunds on another that shares the secret; a fallback receipt is bound to
 * this process.
 */
export function receiptSigner(secret: string, scope: string): ReceiptSigner {
  const mac = (receipt: Receipt) =>
    createHmac('sha256', secret).update(signedText(receipt, scope)).digest('base64url');
  return {
    sign: mac,
    verify(receipt) {
      const given = receipt.mac;
      if (typeof given !== 'string') return false;
      const expected = Buffer.from(mac(receipt));
      const actual = Buffer.from(given);
      return actual.length === expected.length && timingSafeEqual(actual, expected);
    },
  };
}

/**
 * The fields of a spent receipt a refund or adjustment acts on, in a fixed order, with the store's
 * scope (and, for a fallback receipt, the process): what its mac authenticates.
 */
function signedText(receipt: Receipt, scope: string): string {
  return JSON.stringify([
    'redlimit-receipt-1',
    scope,
    receipt.fallback === true ? PROCESS_TAG : null,
    receipt.policy,
    receipt.algorithm,
    receipt.limits.map((rule) => [rule.limit, rule.windowMs, rule.burst]),
    receipt.keys,
    receipt.cost,
    receipt.at,
    receipt.spendId ?? null,
    receipt.atByKey ?? null,
    receipt.resetMarks ?? null,
  ]);
}
