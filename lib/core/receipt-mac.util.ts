import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Receipt } from './decision';

/**
 * The fields of a spent receipt a refund or adjustment acts on, in a fixed order: what its mac
 * authenticates (every one of them decides what a refund gives back, where, or how often).
 */
function signedText(receipt: Receipt): string {
  return JSON.stringify([
    'redlimit-receipt-1',
    receipt.policy,
    receipt.algorithm,
    receipt.limits.map((rule) => [rule.limit, rule.windowMs, rule.burst]),
    receipt.keys,
    receipt.cost,
    receipt.at,
    receipt.spendId ?? null,
    receipt.atByKey ?? null,
    receipt.resetMarks ?? null,
    receipt.fallback === true,
  ]);
}

/** The mac of a spent receipt: HMAC-SHA256 with the limiter's `receiptSecret`, base64url. */
export function receiptMac(secret: string, receipt: Receipt): string {
  return createHmac('sha256', secret).update(signedText(receipt)).digest('base64url');
}

/** Whether a receipt carries the mac `secret` gives its fields (compared in constant time). */
export function hasValidMac(secret: string, receipt: Receipt): boolean {
  const { mac } = receipt;
  if (typeof mac !== 'string') return false;
  const expected = Buffer.from(receiptMac(secret, receipt));
  const given = Buffer.from(mac);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
