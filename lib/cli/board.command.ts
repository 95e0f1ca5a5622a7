import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cliActor } from './cli-actor.util';
import { BoardApp, cookieOf } from '../board/board-app';
import type { BoardSource } from '../board/board-request';
import { Limiter } from '../core/limiter';
import { PolicyOverrides } from '../core/policy-overrides';
import type { PolicyOptions } from '../core/policy';
import type { PolicyCard } from '../stores/board-book';
import type { RedisStore } from '../stores/redis.store';
import type { CliConfig } from './cli-config.util';

/** The cookie that holds the standalone board's access token once the login link was opened. */
export const AUTH_COOKIE = 'redlimit_board_auth';
/** The largest form body the standalone board reads. */
const MAX_BODY_BYTES = 16 * 1024;

/** How `redlimit board` serves. */
export interface BoardServeOptions {
  /** Port to listen on (0: any free port). */
  readonly port: number;
  /** Address to listen on (default loopback). */
  readonly host: string;
  /** Hides and refuses actions. */
  readonly readOnly: boolean;
  /** The access token (default: a random one, printed in the login link). */
  readonly token?: string;
  /** Bound on each store call, in ms. */
  readonly timeoutMs: number;
}

/** A running standalone board. */
export interface RunningBoard {
  /** `http://host:port`. */
  readonly url: string;
  /** The link that signs a browser in (sets the access cookie, then redirects to the board). */
  readonly loginUrl: string;
  /** Stops listening. */
  close(): Promise<void>;
}

/**
 * `redlimit board`: the ops board served by the CLI against the app's Redis (single, Cluster or
 * Sentinel), with the policies of `REDLIMIT_POLICIES` / `--policies` and those the fleet's apps
 * published. Only the holder of the access token gets in: the login link carries it once, the
 * board then keeps it in an HttpOnly, SameSite=Strict cookie and redirects to a URL without it.
 * Listens on loopback unless `--host` says otherwise. Actions are audited as `cli:<user>`.
 *
 * @example
 * const board = await serveBoard(store, config, { port: 4040, host: '127.0.0.1', readOnly: false, timeoutMs: 5000 });
 * console.log(`open ${board.loginUrl}`);
 */
export async function serveBoard(
  store: RedisStore,
  config: CliConfig,
  options: BoardServeOptions,
): Promise<RunningBoard> {
  const token = options.token ?? randomBytes(24).toString('base64url');
  const limiters = new Map<string, Limiter>();
  // Peeks show the limits in force; overrides set here are checked against these policies.
  const liveLimits = new PolicyOverrides(store.overrides(), { pollMs: 1_000 });
  await liveLimits.start().catch(() => undefined); // (a store that does not answer: it warns)
  const limiterOf = (definition: PolicyOptions): void => {
    if (limiters.has(definition.name)) return;
    try {
      limiters.set(
        definition.name,
        // Fail mode closed, silently: a failing store shows as an error, never as a budget.
        new Limiter(
          store,
          { ...definition, failMode: 'closed' },
          {
            timeoutMs: options.timeoutMs,
            onStoreFailure: () => undefined,
            overrides: liveLimits,
          },
        ),
      );
    } catch {
      // A card a newer or older app published that this version cannot read: shown, not acted on.
    }
  };
  for (const [name, definition] of Object.entries(config.policies)) {
    limiterOf({ ...definition, name });
  }
  const book = store.board();
  const source: BoardSource = {
    book,
    limiters: () => [...limiters.values()],
    ...(config.keySecret !== undefined && { keySecret: config.keySecret }),
    clientIp: (address) => config.clientIp(address),
    via: 'cli',
    overrides: async () => (await store.overrides().list()).overrides,
    setOverride: (policy, change, options) =>
      liveLimits.set(limiters.get(policy)!.policy, change, options),
    clearOverride: (policy, options) => liveLimits.clear(policy, options),
  };
  const app = new BoardApp(source, { readOnly: options.readOnly });
  const actor = cliActor();

  const server = createServer((req, res) => {
    void handle(req, res);
  });
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    try {
      const url = new URL(req.url ?? '/', 'http://board.invalid');
      const route = url.pathname.replace(/^\/+|\/+$/g, '');
      const given = url.searchParams.get('token');
      if (given !== null) {
        if (!equal(given, token)) return end(res, 403, 'Wrong access token');
        res.setHeader('set-cookie', `${AUTH_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Strict`);
        res.setHeader('location', '/');
        return end(res, 303, 'Signed in');
      }
      const held = cookieOf(req.headers, AUTH_COOKIE);
      if (held === undefined || !equal(held, token)) {
        return end(res, 403, 'Open the login link redlimit board printed');
      }
      for (const card of await book.cards()) limiterOf(definitionOf(card));
      const body = req.method === 'POST' ? await formOf(req) : undefined;
      if (body === null) return end(res, 413, 'Form too large');
      const query: Record<string, string> = {};
      url.searchParams.forEach((value, name) => (query[name] ??= value));
      const answer = await app.handle({
        method: req.method ?? 'GET',
        route,
        base: '',
        query,
        headers: req.headers,
        ...(body !== undefined && { body }),
        secure: false,
        actor,
      });
      for (const [name, value] of Object.entries(answer.headers)) {
        res.setHeader(name, value);
      }
      res.statusCode = answer.status;
      res.end(answer.body);
    } catch (error) {
      end(res, 500, error instanceof Error ? error.message : String(error));
    }
  };

  await listen(server, options.port, options.host);
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  return {
    url,
    loginUrl: `${url}/?token=${token}`,
    close: () =>
      new Promise<void>((resolve) => {
        liveLimits.stop();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A published policy card as policy options (for peeks and unlocks from the CLI). */
export function definitionOf(card: PolicyCard): PolicyOptions {
  const block = card.block;
  return {
    name: card.name,
    algorithm: card.algorithm as PolicyOptions['algorithm'],
    limits: card.limits.map(({ limit, windowMs }) => ({
      limit,
      window: windowMs,
      ...(card.burst !== undefined && { burst: card.burst }),
    })),
    ...(block && {
      block: {
        duration: block.durationMs,
        factor: block.factor,
        max: block.maxMs,
        forgetAfter: block.forgetAfterMs,
        restart: block.restart,
      },
    }),
    ...(card.shadow && { shadow: true }),
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** A urlencoded form, or null when it is larger than {@link MAX_BODY_BYTES}. */
async function formOf(req: IncomingMessage): Promise<Record<string, string> | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(chunk);
  }
  const form: Record<string, string> = {};
  new URLSearchParams(Buffer.concat(chunks).toString('utf8')).forEach((value, name) => {
    form[name] ??= value;
  });
  return form;
}

function end(res: ServerResponse, status: number, message: string): void {
  res.statusCode = status;
  res.setHeader('content-type', 'text/plain; charset=utf-8');
  res.setHeader('cache-control', 'no-store');
  res.end(`${message}\n`);
}

function equal(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
