import { type ClientPort, type CommandSender, type EvalScript, isNoScript } from './port-contract';
import type { IoredisLikeClient } from './redis-client.shape';
import { atTurnEnd } from '../turn-end';

type ScriptCommand = (numKeys: number, ...args: Array<string | number>) => Promise<unknown>;

/** What a held write needs of a node's socket (a Node `net.Socket`). */
interface Corkable {
  cork(): void;
  uncork(): void;
}

/**
 * {@link ClientPort} of an ioredis (or iovalkey) `Redis` or `Cluster`.
 *
 * On a Cluster, ioredis writes each command to its node's socket as it is issued: decisions on
 * different slots (one script run each) would reach a master in as many writes, and cost it as
 * many reads and reply writes. So the first script call of an event-loop turn corks the socket of
 * every master, and the end of the turn uncorks them (see {@link atTurnEnd}, after the coalescer's
 * batches are sent): a turn's calls reach each master in one write, its replies come back
 * together. Each call stays an ordinary ioredis command, with ioredis's own routing, MOVED/ASK
 * redirections, retries on failover and replies; a socket keeps the order of the calls written to
 * it. Other commands written to those sockets in that turn (by the application, on the same
 * client) leave with them. Not done with `enableAutoPipelining`, where ioredis groups the writes
 * itself.
 */
export class IoredisPort implements ClientPort {
  readonly cluster: boolean;
  /** Whether script calls hold the masters' writes until the end of the turn. */
  private readonly holdsWrites: boolean;
  /** The sockets corked in this turn, until it ends. */
  private held?: Corkable[];

  constructor(private readonly client: IoredisLikeClient) {
    this.cluster = client.isCluster === true;
    const { options } = client as { options?: { enableAutoPipelining?: unknown } };
    this.holdsWrites =
      this.cluster && typeof client.nodes === 'function' && options?.enableAutoPipelining !== true;
  }

  status(): string {
    return this.client.status;
  }

  time(): Promise<ReadonlyArray<string | number>> {
    return this.client.call('time') as Promise<ReadonlyArray<string | number>>;
  }

  fcall(
    fn: string,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
  ): Promise<unknown> {
    // As one array: ioredis finds the keys (and so the slot on a Cluster) from FCALL's numkeys.
    const argv: Array<string | number> = [fn, keys.length];
    for (const key of keys) argv.push(key);
    for (const arg of args) argv.push(arg);
    if (this.holdsWrites) this.holdWrites();
    return this.client.call('fcall', argv);
  }

  /**
   * ioredis loads a defined command again with EVAL when Redis answers NOSCRIPT, once, and may
   * send that retry as EVALSHA (another retry has just loaded the script on this connection): a
   * second flush in between answers NOSCRIPT again, so the call is sent once more as EVAL.
   */
  evalScript(
    { name, lua }: EvalScript,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
  ): Promise<unknown> {
    const client = this.client as unknown as Record<string, ScriptCommand | undefined>;
    if (!client[name]) this.client.defineCommand(name, { lua });
    const call = client[name] as ScriptCommand;
    if (this.holdsWrites) this.holdWrites();
    return call.call(this.client, keys.length, ...keys, ...args).catch((error: unknown) => {
      if (!isNoScript(error)) throw error;
      return this.client.eval(lua, keys.length, ...keys, ...args);
    });
  }

  /** Corks every master's socket, once a turn, until the turn ends (see the class). */
  private holdWrites(): void {
    if (this.held !== undefined) return;
    const held: Corkable[] = (this.held = []);
    for (const node of this.client.nodes!('master')) {
      const stream = (node as { stream?: Partial<Corkable> }).stream;
      if (typeof stream?.cork !== 'function' || typeof stream.uncork !== 'function') continue;
      stream.cork();
      held.push(stream as Corkable);
    }
    atTurnEnd('release', () => {
      this.held = undefined;
      for (const stream of held) stream.uncork();
    });
  }

  masters(): Promise<CommandSender[]> {
    const nodes = this.cluster && this.client.nodes ? this.client.nodes('master') : [this.client];
    return Promise.resolve(
      nodes.map(
        (node): CommandSender =>
          ([command, ...args]) =>
            node.call(command!, ...args),
      ),
    );
  }
}
