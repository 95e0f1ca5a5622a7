import { type ClientPort, type CommandSender, type EvalScript, isNoScript } from './port-contract';
import type { IoredisLikeClient } from './redis-client.shape';

type ScriptCommand = (numKeys: number, ...args: Array<string | number>) => Promise<unknown>;

/** {@link ClientPort} of an ioredis (or iovalkey) `Redis` or `Cluster`. */
export class IoredisPort implements ClientPort {
  readonly cluster: boolean;

  constructor(private readonly client: IoredisLikeClient) {
    this.cluster = client.isCluster === true;
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
    return call.call(this.client, keys.length, ...keys, ...args).catch((error: unknown) => {
      if (!isNoScript(error)) throw error;
      return this.client.eval(lua, keys.length, ...keys, ...args);
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
