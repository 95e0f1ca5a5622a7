import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { BoardApp } from '../../board/board-app';
import { BoardRecorder } from '../../board/board-recorder';
import type { BoardRequest, BoardSource } from '../../board/board-request';
import type { BoardBook } from '../../stores/board-book';
import { RedlimitHttp } from '../contexts/redlimit-http.service';
import { RedlimitConnection } from '../module/redlimit-connection.service';
import { RedlimitEvents } from '../module/redlimit-events.service';
import { LimiterRegistry } from '../registry/limiter.registry';
import { REDLIMIT_BOARD_OPTIONS } from './redlimit-board.constants';
import type { RedlimitBoardOptions } from './redlimit-board.options';

/** A request as Express and Fastify both give it (the fields the board reads). */
interface HttpRequest {
  readonly method?: string;
  readonly url?: string;
  readonly originalUrl?: string;
  readonly headers?: BoardRequest['headers'];
  readonly query?: unknown;
  readonly body?: unknown;
  readonly protocol?: string;
  readonly secure?: boolean;
}

/**
 * Serves the ops board from the app (see `RedlimitBoardModule`) and records what it shows: the
 * module's limiters' decisions, refusals and lockouts, written to the store's board book every
 * `flushMs`. Internal to the board module.
 */
@Injectable()
export class RedlimitBoard implements OnModuleInit, OnApplicationShutdown {
  private readonly app: BoardApp;
  private readonly recorder: BoardRecorder;

  constructor(
    @Inject(REDLIMIT_BOARD_OPTIONS) private readonly options: RedlimitBoardOptions,
    connection: RedlimitConnection,
    http: RedlimitHttp,
    events: RedlimitEvents,
    private readonly registry: LimiterRegistry,
    private readonly adapterHost: HttpAdapterHost,
  ) {
    const book = bookOf(connection.store);
    const { keySecret, groupIp } = http.keying();
    const source: BoardSource = {
      book,
      limiters: () => registry.names.map((name) => registry.get(name)),
      ...(keySecret !== undefined && { keySecret }),
      clientIp: groupIp,
      via: 'board',
      ...(registry.liveLimits !== undefined && {
        overrides: () => registry.liveLimits!.list(),
        setOverride: (policy, change, options) => registry.override(policy, change, options),
        clearOverride: (policy, options) => registry.clearOverride(policy, options),
      }),
    };
    this.app = new BoardApp(source, { readOnly: options.readOnly === true });
    this.recorder = new BoardRecorder(events, book, {
      limiters: () => source.limiters(),
      ...(options.flushMs !== undefined && { flushMs: options.flushMs }),
    });
  }

  /** Starts recording what the board shows. */
  onModuleInit(): void {
    this.recorder.start();
  }

  /** Stops recording and writes what is left (waiting at most a few seconds for the store). */
  async onApplicationShutdown(): Promise<void> {
    await this.recorder.stop();
  }

  /** Writes what was counted now (for tests; the recorder flushes every `flushMs` anyway). */
  flush(): Promise<void> {
    return this.recorder.flush();
  }

  /** Answers one request to the board (route: below the board's path). */
  async serve(request: unknown, response: unknown, route: string): Promise<void> {
    const req = request as HttpRequest;
    const url = req.originalUrl ?? req.url ?? '';
    const answer = await this.app.handle({
      method: (req.method ?? 'GET').toUpperCase(),
      route,
      base: baseOf(url, route),
      query: queryOf(req.query),
      headers: req.headers ?? {},
      ...(typeof req.body === 'object' &&
        req.body !== null && {
          body: req.body as Record<string, unknown>,
        }),
      secure: req.secure === true || req.protocol === 'https',
      actor: this.actorOf(request),
    });
    const adapter = this.adapterHost.httpAdapter;
    for (const [name, value] of Object.entries(answer.headers)) {
      adapter.setHeader(response, name, value as string);
    }
    adapter.reply(response, answer.body, answer.status);
  }

  private actorOf(request: unknown): string {
    let actor: string | undefined;
    try {
      actor = this.options.actor?.(request);
    } catch {
      actor = undefined;
    }
    return typeof actor === 'string' && actor.trim() !== '' ? actor.trim().slice(0, 200) : 'board';
  }
}

function bookOf(store: unknown): BoardBook {
  const board = (store as { board?: () => BoardBook }).board;
  if (typeof board !== 'function') {
    throw new TypeError(
      'RedlimitBoardModule needs the RedlimitModule store to keep a board book ' +
        '(RedisStore and MemoryStore do; a custom store needs a board() method)',
    );
  }
  return board.call(store);
}

/**
 * The board's path as the browser sees it: the request's path (the path alone, even when the
 * request line named a host) less the route's segments, however the client spelled them.
 */
export function baseOf(url: string, route: string): string {
  let path: string;
  try {
    path = new URL(url, 'http://board.invalid').pathname;
  } catch {
    path = '/';
  }
  const segments = path.replace(/\/+$/, '').split('/');
  const depth = route === '' ? 0 : route.split('/').length;
  return segments.slice(0, Math.max(1, segments.length - depth)).join('/');
}

function queryOf(query: unknown): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  if (typeof query !== 'object' || query === null) return out;
  for (const [name, value] of Object.entries(query as Record<string, unknown>)) {
    if (typeof value === 'string') out[name] = value;
    else if (Array.isArray(value) && typeof value[0] === 'string') out[name] = value[0];
  }
  return out;
}
