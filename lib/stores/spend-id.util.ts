import { randomBytes } from 'node:crypto';

// Unique across processes (random per process) and within one (a counter): short, cheap, no clock.
const processTag = randomBytes(6).toString('base64url');
let counter = 0;

/**
 * A new id for one spend: the refund ledger records it so a spend is refunded at most once, and a
 * sliding log names the members the spend added after it.
 */
export function nextSpendId(): string {
  counter = (counter + 1) % Number.MAX_SAFE_INTEGER;
  return `${processTag}${counter.toString(36)}`;
}
