import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create(AppModule);
  app.enableShutdownHooks();
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port);
  new Logger('sample').log(
    `listening on http://localhost:${port}: POST /auth/sign-in {"email","password"}, ` +
      'POST /links {"url"}, GET /links, GET /health',
  );
}

void bootstrap();
