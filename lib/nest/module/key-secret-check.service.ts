import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { REDLIMIT_LOGGER_CONTEXT, REDLIMIT_METADATA, REDLIMIT_OPTIONS } from './redlimit.constants';
import type { RedlimitMetadata } from '../throttle/redlimit.metadata';
import type { RedlimitModuleOptions } from '../../config/redlimit-options.interface';

/**
 * At startup with `NODE_ENV=production`, warns once when the app hashes identities (an
 * `@Attempt` anywhere, a `@Throttle` layer `by: 'apiKey'`, or the `apiKey` option) without
 * `keySecret`: plain SHA-256 keeps emails and IPs out of plain sight, but anyone who can read the
 * keys reverses them by hashing candidates (every IPv4 address in seconds, a leaked email list).
 * Provided by `RedlimitModule`; nothing to register.
 *
 * @example
 * Logged at bootstrap:
 * ```text
 * WARN [Redlimit] keySecret is not set: @Attempt keys are plain SHA-256 … Set keySecret (REDLIMIT_KEY_SECRET) …
 * ```
 */
@Injectable()
export class RedlimitKeySecretCheck implements OnApplicationBootstrap {
  private readonly logger = new Logger(REDLIMIT_LOGGER_CONTEXT);

  constructor(
    @Inject(REDLIMIT_OPTIONS) private readonly options: RedlimitModuleOptions,
    private readonly discovery: DiscoveryService,
  ) {}

  /** Runs the check once the app's controllers and providers exist. */
  onApplicationBootstrap(): void {
    if (process.env.NODE_ENV !== 'production' || this.options.keySecret) return;
    const hashing = this.options.apiKey !== undefined || this.hashesIdentities();
    if (!hashing) return;
    this.logger.warn(
      'keySecret is not set: @Attempt and API-key caller keys are plain SHA-256 of emails, IPs and ' +
        'keys, which anyone who can read Redis (or the decision events) reverses by hashing ' +
        'candidates — every IPv4 address in seconds, a leaked email list. Set keySecret ' +
        '(REDLIMIT_KEY_SECRET) to a long random secret, kept like a password; changing it later ' +
        'gives every caller a fresh budget.',
    );
  }

  /** Whether any controller or provider has an `@Attempt` or a `by: 'apiKey'` layer. */
  private hashesIdentities(): boolean {
    const wrappers = [...this.discovery.getControllers(), ...this.discovery.getProviders()];
    for (const { metatype } of wrappers) {
      if (typeof metatype !== 'function' || !metatype.prototype) continue;
      if (hashes(metadataOf(metatype))) return true;
      for (let proto: unknown = metatype.prototype; proto && proto !== Object.prototype;) {
        for (const name of Object.getOwnPropertyNames(proto)) {
          const method = Object.getOwnPropertyDescriptor(proto, name)?.value as unknown;
          if (typeof method === 'function' && hashes(metadataOf(method))) {
            return true;
          }
        }
        proto = Object.getPrototypeOf(proto);
      }
    }
    return false;
  }
}

function metadataOf(target: object): RedlimitMetadata | undefined {
  return Reflect.getMetadata(REDLIMIT_METADATA, target) as RedlimitMetadata | undefined;
}

function hashes(metadata: RedlimitMetadata | undefined): boolean {
  if (!metadata) return false;
  if (metadata.attempt) return true;
  const layers = metadata.throttle || [];
  return layers.some((layer) => layer.by === 'apiKey');
}
