// The contract every client port implements, and what the ports share. It imports nothing, so the
// ports and the shape dispatch in client-port.ts depend on it and never on each other.

/** Sends one command, given as its arguments, to one node. */
export type CommandSender = (args: string[]) => Promise<unknown>;

/** A script sent as EVALSHA (and as EVAL when the server lacks it). */
export interface EvalScript {
  /** A name of its own (ioredis defines a command by it). */
  readonly name: string;
  /** Its source. */
  readonly lua: string;
}

/**
 * What RedisStore needs of a client, whichever package made it: script calls (routed by their
 * first key on a Cluster), `TIME`, the masters to load the function library on, the state.
 */
export interface ClientPort {
  /** Whether the client is a Cluster client (keys of one script call must share a slot). */
  readonly cluster: boolean;
  /** The connection state, in ioredis's words where it can (`ready`, `end`, …). */
  status(): string;
  /** One Redis `TIME`: [seconds, microseconds]. */
  time(): Promise<ReadonlyArray<string | number>>;
  /** `FCALL fn numkeys keys… args…`. */
  fcall(
    fn: string,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
  ): Promise<unknown>;
  /**
   * The script by SHA, sent again as EVAL when Redis answers NOSCRIPT (which means it did not
   * run, so sending it again cannot spend twice).
   */
  evalScript(
    script: EvalScript,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
  ): Promise<unknown>;
  /** A sender per master: the server itself, or every master of a Cluster. */
  masters(): Promise<CommandSender[]>;
}

/** Redis did not have the script: it did not run. */
export function isNoScript(error: unknown): boolean {
  return (error instanceof Error ? error.message : String(error)).startsWith('NOSCRIPT');
}
