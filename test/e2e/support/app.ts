/**
 * Fixture-app plumbing for the e2e specs: one Nest app per platform, listening on a free port of
 * 127.0.0.1, reached with Node's global fetch.
 */
import type { INestApplication, LoggerService, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';

export type Platform = 'express' | 'fastify';

/** Every spec runs `describe.each(PLATFORMS)`. */
export const PLATFORMS: Platform[] = ['express', 'fastify'];

export interface RunningApp {
  readonly app: INestApplication;
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Messages the app logged, as `level: message`. */
  readonly logs: string[];
  /** fetch against the app; a JSON `body` object is serialised. */
  request(path: string, init?: JsonRequestInit): Promise<Response>;
  close(): Promise<void>;
}

export interface JsonRequestInit extends Omit<RequestInit, 'body'> {
  body?: unknown;
}

/** A logger that keeps what it is told (Nest's `logger: false` would drop the warnings we test). */
export function collectingLogger(logs: string[]): LoggerService {
  const keep =
    (level: string) =>
    (message: unknown): void => {
      logs.push(`${level}: ${String(message)}`);
    };
  return {
    log: keep('log'),
    warn: keep('warn'),
    error: keep('error'),
    debug: keep('debug'),
    verbose: keep('verbose'),
    fatal: keep('fatal'),
  };
}

/** Boots `module` on the platform and listens on a free port. Close it in afterAll/afterEach. */
export async function startApp(module: Type, platform: Platform): Promise<RunningApp> {
  const logs: string[] = [];
  const options = { logger: collectingLogger(logs), abortOnError: false };
  const app =
    platform === 'express'
      ? await NestFactory.create(module, new ExpressAdapter(), options)
      : await NestFactory.create(module, new FastifyAdapter(), options);
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
  return {
    app,
    url,
    logs,
    request: (path, init = {}) => {
      const { body, headers, ...rest } = init;
      return fetch(`${url}${path}`, {
        ...rest,
        headers: { ...(body !== undefined && { 'content-type': 'application/json' }), ...headers },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
    },
    close: () => app.close(),
  };
}

/** Status codes of responses, in order. */
export async function statuses(responses: Promise<Response>[]): Promise<number[]> {
  return (await Promise.all(responses)).map((r) => r.status);
}

/** How many entries equal `value`. */
export function count<T>(values: T[], value: T): number {
  return values.filter((v) => v === value).length;
}
