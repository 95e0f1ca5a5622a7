/** The part of autocannon 8's API the HTTP bench uses (the package ships no types). */
declare module 'autocannon' {
  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    pipelining?: number;
  }
  interface Histogram {
    average: number;
    p50: number;
    p99: number;
    total: number;
  }
  interface Result {
    /** Seconds. */
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
    /** Milliseconds. */
    latency: Histogram;
    /** Per-second samples; `total` is every completed request. */
    requests: Histogram;
  }
  function autocannon(options: Options): Promise<Result>;
  export = autocannon;
}
