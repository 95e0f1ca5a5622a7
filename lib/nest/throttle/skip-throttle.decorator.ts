import { defineRedlimitMetadata } from './redlimit.metadata';

/**
 * Exempts a handler, or every handler of a controller, from {@link RedlimitGuard}: from the
 * global `defaultPolicy` and from a controller's `@Throttle`. A handler's own `@Throttle` still
 * applies under a controller's `@SkipThrottle()`. `@Attempt` is not affected.
 *
 * @example
 * ```ts
 * @Get('health')
 * @SkipThrottle()
 * health() {
 *   return { status: 'ok' };
 * }
 * ```
 */
export function SkipThrottle(): ClassDecorator & MethodDecorator {
  return (target: object, _key?: string | symbol, descriptor?: PropertyDescriptor) => {
    defineRedlimitMetadata(descriptor ? (descriptor.value as object) : target, { throttle: false });
  };
}
