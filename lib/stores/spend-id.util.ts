import { randomBytes } from 'node:crypto';
import type { Algorithm } from '../core/policy';

// Unique across processes (random per process) and within one (a counter): short, cheap, no clock.
const processTag = randomBytes(6).toString('base64url');
let counter = 0;

/** A new id for one spend; a sliding log stores it as the member(s) the spend added. */
export function nextSpendId(): string {
  counter = (counter + 1) % Number.MAX_SAFE_INTEGER;
  return `${processTag}${counter.toString(36)}`;
}

/** Whether an algorithm stores per-spend members, so a refund needs the spend's id. */
export function usesSpendIds(algorithm: Algorithm): boolean {
  return algorithm === 'sliding-log';
}
