import {
  type ConfigurableModuleAsyncOptions,
  ConfigurableModuleBuilder,
  type NestInterceptor,
  type Type,
} from '@nestjs/common';
import { AttemptInterceptor } from '../attempt/attempt.interceptor';
import { REDLIMIT_ATTEMPT_INTERCEPTOR, REDLIMIT_OPTIONS } from './redlimit.constants';
import type { RedlimitModuleOptions } from '../../config/redlimit-options.interface';

/** Options of `forRoot`/`forRootAsync` that shape the module itself rather than its limits. */
export interface RedlimitModuleExtras {
  /** Register the module globally, so every module can inject the registry. Default true. */
  readonly isGlobal?: boolean;
  /** The interceptor serving `@Attempt`, e.g. a subclass of {@link AttemptInterceptor}. */
  readonly attemptInterceptor?: Type<NestInterceptor>;
}

/** What {@link RedlimitModule.forRoot} takes: the module's options and its extras. */
export type RedlimitModuleForRootOptions = RedlimitModuleOptions & Partial<RedlimitModuleExtras>;

/**
 * What {@link RedlimitModule.forRootAsync} takes: `imports`, `inject` and `useFactory` (or
 * `useClass`/`useExisting`) producing {@link RedlimitModuleOptions}, and the module's extras.
 */
export type RedlimitModuleAsyncOptions = ConfigurableModuleAsyncOptions<
  RedlimitModuleOptions,
  'create'
> &
  Partial<RedlimitModuleExtras>;

const definition = new ConfigurableModuleBuilder<RedlimitModuleOptions>({
  optionsInjectionToken: REDLIMIT_OPTIONS,
})
  .setClassMethodName('forRoot')
  .setExtras<RedlimitModuleExtras>({ isGlobal: true }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal ?? true,
    providers: [
      ...(definition.providers ?? []),
      // Not an APP_INTERCEPTOR: @Attempt attaches AttemptDispatchInterceptor to its own handler,
      // which hands over to this one, so routes without @Attempt pay for no interceptor at all.
      {
        provide: REDLIMIT_ATTEMPT_INTERCEPTOR,
        useClass: extras.attemptInterceptor ?? AttemptInterceptor,
      },
    ],
    exports: [...(definition.exports ?? []), REDLIMIT_ATTEMPT_INTERCEPTOR],
  }))
  .build();

/**
 * The class `RedlimitModule` extends, built by Nest's `ConfigurableModuleBuilder`. Exported as a
 * type only, so the declaration of `RedlimitModule` resolves; use `RedlimitModule` itself.
 */
export const RedlimitConfigurableModule = definition.ConfigurableModuleClass;
