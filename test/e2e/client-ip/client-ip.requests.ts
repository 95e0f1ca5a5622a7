/**
 * Requests fetch cannot make: several header lines of one name, sent as written (fetch joins them
 * before they leave), and requests over a Unix socket; and an app that listens on one.
 */
import type { INestApplication, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { collectingLogger, type Platform } from '../support/app';

/**
 * Sends one HTTP/1.1 request over a fresh connection with `lines` as header lines, in order and
 * unjoined; resolves with the response's status code.
 */
export function rawRequest(
  url: string,
  method: string,
  path: string,
  lines: ReadonlyArray<readonly [string, string]>,
): Promise<number> {
  const { hostname, port } = new URL(url);
  const head =
    `${method} ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n` +
    lines.map(([name, value]) => `${name}: ${value}\r\n`).join('') +
    'Content-Length: 0\r\nConnection: close\r\n\r\n';
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(Buffer.from(head, 'latin1')));
    let reply = '';
    socket.on('data', (chunk: Buffer) => (reply += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => {
      const status = /^HTTP\/1\.1 (\d{3})/.exec(reply);
      if (status) resolve(Number(status[1]));
      else reject(new Error(`no HTTP status in ${JSON.stringify(reply.slice(0, 80))}`));
    });
  });
}

/** An app listening on a Unix socket, as behind nginx's `proxy_pass http://unix:/run/app.sock`. */
export interface UnixApp {
  readonly app: INestApplication;
  readonly logs: string[];
  /** A request over the socket; resolves with the status code. */
  request(method: string, path: string, headers?: Record<string, string>): Promise<number>;
  close(): Promise<void>;
}

let sockets = 0;

/** Boots `module` on the platform, listening on a fresh Unix socket path. */
export async function startUnixApp(module: Type, platform: Platform): Promise<UnixApp> {
  const logs: string[] = [];
  const options = { logger: collectingLogger(logs), abortOnError: false };
  const socketPath = join(tmpdir(), `redlimit-client-ip-${process.pid}-${++sockets}.sock`);
  rmSync(socketPath, { force: true });
  let app: INestApplication;
  if (platform === 'express') {
    app = await NestFactory.create(module, new ExpressAdapter(), options);
    await app.listen(socketPath);
  } else {
    const fastify = await NestFactory.create<NestFastifyApplication>(
      module,
      new FastifyAdapter(),
      options,
    );
    await fastify.listen({ path: socketPath });
    app = fastify;
  }
  return {
    app,
    logs,
    request: (method, path, headers = {}) =>
      new Promise((resolve, reject) => {
        const sent = httpRequest({ socketPath, method, path, headers }, (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode ?? 0));
        });
        sent.on('error', reject);
        sent.end();
      }),
    close: async () => {
      await app.close();
      rmSync(socketPath, { force: true });
    },
  };
}
