/**
 * Estimates how far the store's clock is ahead of this process's monotonic clock, from replies that
 * carry the store's time: the sample with the shortest round trip wins, and samples older than a
 * minute give way, so the estimate follows drift. Error: half the best round trip.
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
    if (roundTrip <= this.bestRoundTripMs || receivedAt - this.sampledAt > 60_000) {
      this.offsetMs = storeNow - (sentAt + receivedAt) / 2;
      this.bestRoundTripMs = roundTrip;
      this.sampledAt = receivedAt;
    }
  }
}
