import { type DynamicModule, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { RedlimitGuardOrderCheck } from './guard-order.check';
import { RedlimitKeySecretCheck } from './key-secret-check.service';
import { LeaseReleaseWiring } from '../leases/lease-release.interceptor';
import { LimiterRegistry } from '../registry/limiter.registry';
import { REDLIMIT_OPTIONS } from './redlimit.constants';
import {
  RedlimitConfigurableModule,
  type RedlimitModuleAsyncOptions,
  type RedlimitModuleForRootOptions,
} from './redlimit.module-definition';
import { RedlimitConnection } from './redlimit-connection.service';
import { RedlimitEvents } from './redlimit-events.service';
import { RedlimitDevices } from '../attempt/redlimit-devices.service';
import { RedlimitHttp } from '../contexts/redlimit-http.service';
import type { RedlimitModuleOptions } from '../../config/redlimit-options.interface';

/**
 * Rate limiting on Redis for a Nest app: provides {@link LimiterRegistry}, {@link RedlimitHttp},
 * {@link RedlimitConnection}, {@link RedlimitEvents} and {@link RedlimitDevices}, serves `@Attempt` and backs
 * {@link RedlimitGuard}. Global by default (`isGlobal: false` to scope it).
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [
 *     RedlimitModule.forRoot({
 *       redis: process.env.REDIS_URL,
 *       policies: { login: { algorithm: 'fixed-window', limit: 10, window: '15m' } },
 *     }),
 *   ],
 *   providers: [{ provide: APP_GUARD, useClass: RedlimitGuard }],
 * })
 * export class AppModule {}
 * ```
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: RedlimitConnection,
      useFactory: (options: RedlimitModuleOptions) => RedlimitConnection.open(options),
      inject: [REDLIMIT_OPTIONS],
    },
    RedlimitEvents,
    LimiterRegistry,
    RedlimitHttp,
    RedlimitDevices,
    RedlimitKeySecretCheck,
    RedlimitGuardOrderCheck,
    LeaseReleaseWiring,
  ],
  exports: [RedlimitConnection, RedlimitEvents, LimiterRegistry, RedlimitHttp, RedlimitDevices],
})
export class RedlimitModule extends RedlimitConfigurableModule {
  /**
   * Configures the module with options known up front.
   *
   * @example
   * RedlimitModule.forRoot({ redis: 'redis://localhost:6379', policies: { api: { algorithm: 'sliding-window', limit: 100, window: '1m' } } });
   */
  static override forRoot(options: RedlimitModuleForRootOptions): DynamicModule {
    return super.forRoot(options);
  }

  /**
   * Configures the module from other providers, e.g. `ConfigService` with
   * {@link redlimitOptionsFromEnv}. An error thrown by `useFactory` fails the boot.
   *
   * @example
   * RedlimitModule.forRootAsync({
   *   imports: [ConfigModule],
   *   inject: [ConfigService],
   *   useFactory: (config: ConfigService) => redlimitOptionsFromEnv(config),
   * });
   */
  static override forRootAsync(options: RedlimitModuleAsyncOptions): DynamicModule {
    return super.forRootAsync(options);
  }
}
