import {
  type CanActivate,
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  Optional,
  RequestMethod,
  type Type,
} from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { LimiterRegistry } from '../registry/limiter.registry';
import { REDLIMIT_LOGGER_CONTEXT, REDLIMIT_OPTIONS } from './redlimit.constants';
import { RedlimitGuard } from '../throttle/redlimit.guard';
import { type AttemptMetadata, readRedlimitMetadata } from '../throttle/redlimit.metadata';
import type { RedlimitModuleOptions } from '../../config/redlimit-options.interface';
import { RedlimitDevices } from '../attempt/redlimit-devices.service';

// Nest's metadata keys (`@nestjs/common/constants`, not an entry point every Nest version exports).
const GUARDS_METADATA = '__guards__';
const PATH_METADATA = 'path';
const METHOD_METADATA = 'method';
// @MessagePattern / @EventPattern handlers (`@nestjs/microservices`).
const PATTERN_METADATA = 'microservices:pattern';

/** A guard as bound: a class (`@UseGuards(AuthGuard)`) or an instance. */
type BoundGuard = Type<CanActivate> | CanActivate;

/**
 * At startup, warns once per route where a guard runs before redlimit charges it, so the guard's
 * own work goes unlimited (a credential check ahead of the limiter is the classic hole,
 * @nestjs/throttler #522):
 * - a route limited by `RedlimitGuard` (`@Throttle`, or the module's `defaultPolicy`) where another
 *   guard comes first: global guards (`APP_GUARD`, in registration order) before the controller's,
 *   before the handler's;
 * - an `@Attempt` route with a guard of its own (on the handler or its controller): every guard
 *   runs before the interceptor that spends the attempt.
 * Global guards registered with `app.useGlobalGuards()` are not visible to it, and global guards
 * are not held against `@Attempt` routes (an app-wide auth guard usually lets sign-in through).
 * It also fails the start of an app with an `@Attempt(…, { devices })` route when the module has
 * no `devices` option, or when the route's policy (a name or an inline definition; a resolver is
 * only known per request) cannot have its devices' lifetime policy `<policy>.devices` (a name
 * too long for a policy, or one the app's own policy already takes). Provided by
 * `RedlimitModule`; nothing to register.
 *
 * @example
 * Logged at bootstrap:
 * ```text
 * WARN [Redlimit] CredentialsGuard runs before RedlimitGuard on AuthController.login (POST /auth/login) …
 * ```
 */
@Injectable()
export class RedlimitGuardOrderCheck implements OnApplicationBootstrap {
  private readonly logger = new Logger(REDLIMIT_LOGGER_CONTEXT);

  constructor(
    @Inject(REDLIMIT_OPTIONS) private readonly options: RedlimitModuleOptions,
    private readonly discovery: DiscoveryService,
    @Optional() private readonly registry?: LimiterRegistry,
    @Optional() private readonly devices?: RedlimitDevices,
  ) {}

  /** Runs the check once the app's controllers and global guards exist. */
  onApplicationBootstrap(): void {
    const global = this.globalGuards();
    for (const { metatype } of this.discovery.getControllers()) {
      if (typeof metatype !== 'function' || !metatype.prototype) continue;
      const controller = metatype as Type;
      const classGuards = guardsOf(controller);
      for (const [name, handler] of handlersOf(controller)) {
        const route = `${controller.name}.${name} (${routeOf(controller, handler)})`;
        const routeGuards = [...classGuards, ...guardsOf(handler)];
        const { throttle, attempt } = readRedlimitMetadata(handler, controller);
        const limited =
          throttle !== false &&
          (throttle !== undefined || this.options.defaultPolicy !== undefined);
        const chain = [...global, ...routeGuards];
        const first = chain.findIndex(isRedlimitGuard);
        if (limited && first > 0) {
          this.logger.warn(
            `${guardName(chain[0]!)} runs before RedlimitGuard on ${route}: what it does (a ` +
              'credential check, a database read) is not limited, and a request it refuses is ' +
              'never charged. Bind RedlimitGuard first (globally, or first in @UseGuards).',
          );
        }
        if (attempt?.devices !== undefined && this.options.devices === undefined) {
          // A route promising the owner a way in must not quietly go without one.
          throw new Error(
            `@Attempt(…, { devices: '${attempt.devices}' }) on ${route} needs RedlimitModule's ` +
              'devices option (e.g. devices: {} with keySecret set)',
          );
        }
        if (attempt?.devices !== undefined && attempt.devices !== false) {
          this.checkDevicesPolicy(attempt.policy, route);
        }
        const own = routeGuards.filter((guard) => !isRedlimitGuard(guard));
        if (attempt !== undefined && own.length > 0) {
          this.logger.warn(
            `${guardName(own[0]!)} runs before @Attempt on ${route}: guards run before the ` +
              'interceptor that spends the attempt, so what the guard checks is not limited and ' +
              'a request it refuses is never charged. Check credentials in the handler, or limit ' +
              'the route with @Throttle and RedlimitGuard bound before the guard.',
          );
        }
      }
    }
  }

  /**
   * Registers the devices' lifetime policy of an `@Attempt(…, { devices })` route's policy now, so
   * a name it cannot have fails the start rather than every trusted sign-in later (a 500).
   */
  private checkDevicesPolicy(policy: AttemptMetadata['policy'], route: string): void {
    const { registry, devices } = this;
    if (registry === undefined || devices === undefined || !devices.enabled) return;
    if (typeof policy === 'function') return; // a resolver: known per request
    if (typeof policy === 'string' && !registry.has(policy)) return; // refused per request, as today
    if (policy === undefined && registry.defaultPolicy === undefined) return;
    const limiter = registry.resolve(policy);
    devices.notePolicy(limiter.policy.name);
    try {
      devices.lifeLimiter(limiter);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new Error(
        `@Attempt(…, { devices }) on ${route}: policy '${limiter.policy.name}' counts device ` +
          `failures under '${limiter.policy.name}.devices', which cannot be registered (${reason}); ` +
          'rename the policy (56 characters at most) or the policy that takes that name',
        { cause: error },
      );
    }
  }

  /** `APP_GUARD` providers, in the order Nest runs them (registration order). */
  private globalGuards(): BoundGuard[] {
    return (
      this.discovery
        .getProviders()
        // Nest registers each APP_GUARD provider under the token 'APP_GUARD (UUID: …)'.
        .filter(({ token }) => typeof token === 'string' && token.startsWith('APP_GUARD'))
        .map(({ instance, metatype }) => (instance ?? metatype) as BoundGuard)
        .filter((guard) => guard !== undefined && guard !== null)
    );
  }
}

function guardsOf(target: object): BoundGuard[] {
  return (Reflect.getMetadata(GUARDS_METADATA, target) as BoundGuard[] | undefined) ?? [];
}

/** The handlers of a controller (own and inherited methods with a route or a message pattern). */
function handlersOf(controller: Type): Array<[string, object]> {
  const handlers: Array<[string, object]> = [];
  const seen = new Set<string>();
  for (
    let proto: unknown = controller.prototype;
    proto && proto !== Object.prototype;
    proto = Object.getPrototypeOf(proto)
  ) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name === 'constructor' || seen.has(name)) continue;
      seen.add(name);
      const method = Object.getOwnPropertyDescriptor(proto, name)?.value as unknown;
      if (
        typeof method === 'function' &&
        (Reflect.hasMetadata(PATH_METADATA, method) ||
          Reflect.hasMetadata(PATTERN_METADATA, method))
      ) {
        handlers.push([name, method]);
      }
    }
  }
  return handlers;
}

/** 'POST /auth/login', from the controller's and the handler's paths; or a message pattern. */
function routeOf(controller: Type, handler: object): string {
  const pattern = Reflect.getMetadata(PATTERN_METADATA, handler) as unknown;
  if (pattern !== undefined && !Reflect.hasMetadata(PATH_METADATA, handler)) {
    return `pattern ${JSON.stringify(Array.isArray(pattern) && pattern.length === 1 ? pattern[0] : pattern)}`;
  }
  const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
  const parts = [controller, handler].flatMap((target) => {
    const path = Reflect.getMetadata(PATH_METADATA, target) as string | string[] | undefined;
    const first = Array.isArray(path) ? path[0] : path;
    return first === undefined ? [] : first.split('/').filter(Boolean);
  });
  return `${RequestMethod[method ?? RequestMethod.GET]} /${parts.join('/')}`;
}

function isRedlimitGuard(guard: BoundGuard): boolean {
  return (
    guard === RedlimitGuard ||
    guard instanceof RedlimitGuard ||
    (typeof guard === 'function' && guard.prototype instanceof RedlimitGuard)
  );
}

function guardName(guard: BoundGuard): string {
  return typeof guard === 'function' ? guard.name : guard.constructor.name;
}
