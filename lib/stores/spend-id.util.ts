import { randomBytes } from 'node:crypto';

// Unique across processes (random per process) and within one (a counter): short, cheap, no clock.
const processTag = randomBytes(6).toString('base64url');
let counter = 0;

/**
 * A new id for one spend: the refund ledger records it so a spend is refunded at most once, and a
 * sliding log names the members the spend added after it.
 */
export function nextSpendId(tag: string = processTag): string {
  counter = (counter + 1) % Number.MAX_SAFE_INTEGER;
  return `${tag}${counter.toString(36)}`;
}

/** A new tag of 8 base64url characters, for spend ids of one store only (see `MemoryStore`). */
export function newSpendTag(): string {
  return randomBytes(6).toString('base64url');
}

/** The sequence number of the latest spend id this process issued (0: none yet). */
export function lastSpendSequence(): number {
  return counter;
}

/**
 * The sequence number of a spend id issued with `tag` (they only grow), or undefined for an id with
 * another tag (another process's, another store's) or not an id at all.
 */
export function spendSequence(spendId: string, tag: string = processTag): number | undefined {
  if (!spendId.startsWith(tag)) return undefined;
  const sequence = parseInt(spendId.slice(tag.length), 36);
  return Number.isSafeInteger(sequence) ? sequence : undefined;
}

/** This process's tag: the start of every spend id it issues with the default tag. */
export function processSpendTag(): string {
  return processTag;
}
