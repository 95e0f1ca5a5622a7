/**
 * This process's monotonic clock in ms: `performance.timeOrigin + performance.now()`. Close to the
 * epoch, but never stepped by NTP or an admin, so intervals measured on it are honest.
 */
export const monotonicNow = (): number => performance.timeOrigin + performance.now();
