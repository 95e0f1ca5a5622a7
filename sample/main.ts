import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create(AppModule);
  app.enableShutdownHooks();
  const port = Number(process.env.PORT ?? 3000);
  // This machine only, unless HOST says otherwise (e.g. HOST=0.0.0.0 in a container).
  const host = process.env.HOST ?? '127.0.0.1';
  await app.listen(port, host);
  const server = app.getHttpServer() as import('node:http').Server;
  const { port: bound } = server.address() as import('node:net').AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${bound}`;
  new Logger('sample').log(
    `listening on ${url}: POST /auth/sign-in {"email","password"}, ` +
      'POST /links {"url"}, GET /links, POST /completions, GET /health; ' +
      'POST /auth/unlock {"email","ip"} with Authorization: Bearer $REDLIMIT_SAMPLE_ADMIN_TOKEN; ' +
      `the ops board at ${url}/ops/limits (from this machine)`,
  );
}

void bootstrap();
