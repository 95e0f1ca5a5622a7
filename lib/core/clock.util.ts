/** `performance.timeOrigin`: fixed for the life of the process (read once, not on every call). */
const TIME_ORIGIN = performance.timeOrigin;

/**
 * This process's monotonic clock in ms: `performance.timeOrigin + performance.now()`. Close to the
 * epoch, but never stepped by NTP or an admin, so intervals measured on it are honest.
 */
export const monotonicNow = (): number => TIME_ORIGIN + performance.now();
