/**
 * Estimates how far the store's clock is ahead of this process's monotonic clock, from replies that
 * carry the store's time: the sample with the shortest round trip wins, samples older than a
 * minute give way (drift), and a sample that disagrees with the estimate by more than both samples'
 * error replaces it at once (the store's clock stepped, or another node answered).
 * Error: half the best round trip.
 */
export class ClockOffset {
  private offsetMs: number | undefined;
  private bestRoundTripMs = Infinity;
  private sampledAt = -Infinity;

  /** The estimate, once at least one sample was taken. */
  get value(): number | undefined {
    return this.offsetMs;
  }

  /** Records that the store read `storeNow` between `sentAt` and `receivedAt` (monotonic). */
  observe(sentAt: number, receivedAt: number, storeNow: number): void {
    const roundTrip = receivedAt - sentAt;
    const offset = storeNow - (sentAt + receivedAt) / 2;
    const stepped =
      this.offsetMs !== undefined &&
      Math.abs(offset - this.offsetMs) > (this.bestRoundTripMs + roundTrip) / 2 + 1;
    if (stepped || roundTrip <= this.bestRoundTripMs || receivedAt - this.sampledAt > 60_000) {
      this.offsetMs = offset;
      this.bestRoundTripMs = roundTrip;
      this.sampledAt = receivedAt;
    }
  }
}
