/**
 * Injection token of the {@link RedlimitModuleOptions} given to `RedlimitModule.forRoot()` or
 * returned by the `useFactory` of `forRootAsync()`.
 *
 * @example
 * constructor(@Inject(REDLIMIT_OPTIONS) private readonly options: RedlimitModuleOptions) {}
 */
export const REDLIMIT_OPTIONS = Symbol('REDLIMIT_OPTIONS');

/** The one metadata key redlimit's decorators write to, holding a {@link RedlimitMetadata}. */
export const REDLIMIT_METADATA = 'redlimit:metadata';

/** Where the attempt interceptor leaves the current request's `Attempt` for `@Attempt()`. */
export const REQUEST_ATTEMPT = Symbol('redlimit:attempt');

/** Name of the Nest logger context redlimit writes to. */
export const REDLIMIT_LOGGER_CONTEXT = 'Redlimit';

/** Guard classes that already charged a request (one charge per guard class and request). */
export const REQUEST_THROTTLED = Symbol('redlimit:throttled');

/**
 * Injection token of the interceptor that serves `@Attempt` (`AttemptInterceptor`, or the
 * `attemptInterceptor` given to `forRoot`); exported by `RedlimitModule`.
 */
export const REDLIMIT_ATTEMPT_INTERCEPTOR = Symbol('redlimit:attempt-interceptor');

/** Where the verdict of the module's `allow`/`deny`/`skipIf` for an HTTP request is kept. */
export const REQUEST_ACCESS = Symbol('redlimit:access');
