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

/** The sequence number of the latest spend id this process issued (0: none yet). */
export function lastSpendSequence(): number {
  return counter;
}

/**
 * The sequence number of a spend id this process issued (they only grow), or undefined for an id
 * from another process (or not an id at all).
 */
export function spendSequence(spendId: string): number | undefined {
  if (!spendId.startsWith(processTag)) return undefined;
  const sequence = parseInt(spendId.slice(processTag.length), 36);
  return Number.isSafeInteger(sequence) ? sequence : undefined;
}
