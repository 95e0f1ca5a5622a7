import { Module, type OnApplicationShutdown } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { AppController } from './app.controller';
import {
  createStore,
  SEARCH_LIMITER,
  searchLimiter,
  SIGN_IN_LIMITER,
  signInLimiter,
} from './limits';
import { RateLimitedFilter } from './rate-limited.filter';

const { store, close } = createStore();

@Module({
  controllers: [AppController],
  providers: [
    { provide: SIGN_IN_LIMITER, useFactory: () => signInLimiter(store) },
    { provide: SEARCH_LIMITER, useFactory: () => searchLimiter(store) },
    { provide: APP_FILTER, useClass: RateLimitedFilter },
  ],
})
export class AppModule implements OnApplicationShutdown {
  async onApplicationShutdown(): Promise<void> {
    await close();
  }
}
