import { type ClientPort, type CommandSender, type EvalScript, isNoScript } from './port-contract';
import type { IoredisLikeClient } from './redis-client.shape';
import { atTurnEnd } from '../turn-end';

type ScriptCommand = (numKeys: number, ...args: Array<string | number>) => Promise<unknown>;

/** What the direct FCALL path uses of ioredis/iovalkey beyond {@link IoredisLikeClient}. */
interface CommandClient {
  readonly options?: {
    readonly keyPrefix?: unknown;
    readonly enableAutoPipelining?: unknown;
    readonly showFriendlyErrorStack?: unknown;
  };
  sendCommand(command: DirectCommand): Promise<unknown>;
}

/** A command object of the client's own package (`Redis.Command`). */
interface DirectCommand {
  args: string[];
}

/**
 * The `Command` class of the package that made `client`: ioredis's or iovalkey's, when the client
 * is an instance of the `Redis` class that package (as installed beside redlimit) exports; else
 * undefined (another copy of the package, or neither installed). Not read from the instance:
 * ioredis mixes EventEmitter into `Redis.prototype`, so `client.constructor` is EventEmitter.
 */
function commandClassOf(client: object): CommandClass | undefined {
  const packages = [
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    () => require('ioredis') as unknown,
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    () => require('iovalkey') as unknown,
  ];
  for (const load of packages) {
    let exported: { Redis?: unknown; Command?: unknown } | undefined;
    try {
      exported = load() as { Redis?: unknown; Command?: unknown };
    } catch {
      continue; // not installed
    }
    const { Redis, Command } = exported;
    if (typeof Redis === 'function' && client instanceof Redis && typeof Command === 'function') {
      return Command as CommandClass;
    }
  }
  return undefined;
}

/** What a held write needs of a node's socket (a Node `net.Socket`). */
interface Corkable {
  cork(): void;
  uncork(): void;
}

type CommandClass = new (
  name: string,
  args: string[],
  options: { replyEncoding: 'utf8'; errorStack?: Error },
) => DirectCommand;

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
  /**
   * The client's `Redis.Command`, for FCALL without `call()`: `call(name, args)` flattens its
   * arguments with `Array.prototype.flat`, which costs far more than the rest of sending a
   * command of this size (about 0.15 µs per argument on Node 20). Undefined on a Cluster, or a
   * client not made by the ioredis or iovalkey installed beside redlimit: those use `call()`.
   */
  private readonly command?: CommandClass;

  constructor(private readonly client: IoredisLikeClient) {
    this.cluster = client.isCluster === true;
    const { options } = client as { options?: { enableAutoPipelining?: unknown } };
    this.holdsWrites =
      this.cluster && typeof client.nodes === 'function' && options?.enableAutoPipelining !== true;
    const { sendCommand } = client as unknown as Partial<CommandClient>;
    if (!this.cluster && typeof sendCommand === 'function') this.command = commandClassOf(client);
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
    const direct = this.command;
    const options = (this.client as unknown as CommandClient).options;
    if (direct !== undefined && !options?.keyPrefix && !options?.enableAutoPipelining) {
      // What call('fcall', argv) sends, built without flattening: every argument a string
      // already (call() would stringify them), no key prefix or auto-pipelining to apply.
      const command = new direct('fcall', [], {
        replyEncoding: 'utf8',
        errorStack: options?.showFriendlyErrorStack ? new Error() : undefined,
      });
      const argv: string[] = [fn, String(keys.length)];
      for (const key of keys) argv.push(key);
      for (const arg of args) argv.push(typeof arg === 'string' ? arg : String(arg));
      command.args = argv;
      return (this.client as unknown as CommandClient).sendCommand(command);
    }
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
