import { ConfigurableModuleBuilder, type NestInterceptor, type Type } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { AttemptInterceptor } from './attempt.interceptor';
import { REDLIMIT_OPTIONS } from './redlimit.constants';
import type { RedlimitModuleOptions } from './redlimit-options.interface';

/** Options of `forRoot`/`forRootAsync` that shape the module itself rather than its limits. */
export interface RedlimitModuleExtras {
  /** Register the module globally, so every module can inject the registry. Default true. */
  readonly isGlobal?: boolean;
  /** The interceptor serving `@Attempt`, e.g. a subclass of {@link AttemptInterceptor}. */
  readonly attemptInterceptor?: Type<NestInterceptor>;
}

export const {
  ConfigurableModuleClass: RedlimitConfigurableModule,
  OPTIONS_TYPE: REDLIMIT_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: REDLIMIT_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<RedlimitModuleOptions>({
  optionsInjectionToken: REDLIMIT_OPTIONS,
})
  .setClassMethodName('forRoot')
  .setExtras<RedlimitModuleExtras>({ isGlobal: true }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal ?? true,
    providers: [
      ...(definition.providers ?? []),
      // Global, but inert on handlers without @Attempt: a parameter decorator cannot attach an
      // interceptor to its handler through public API, and this works the same on every adapter.
      { provide: APP_INTERCEPTOR, useClass: extras.attemptInterceptor ?? AttemptInterceptor },
    ],
  }))
  .build();
