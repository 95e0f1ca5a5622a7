// The default caller keys of `@Throttle`, shared by the guard (which spends them) and the CLI
// (`redlimit peek` / `reset --route … --ip …`, which must name the very same keys).

/**
 * What separates routes in default keys over HTTP: the handler (`Controller.method`), then the
 * route template when the adapter names one — `ItemsController.get /items/:id`. Never the HTTP
 * method: cycling methods on an `@All` route must not multiply its limit.
 *
 * @example
 * routeName('ItemsController.get', '/items/:id'); // 'ItemsController.get /items/:id'
 */
export function routeName(handler: string, template: string | undefined): string {
  return template === undefined ? handler : `${handler} ${template}`;
}

/**
 * The caller key of a client IP (the default tracker): `ip:203.0.113.7`, or `ip:2001:db8::/64`
 * for a grouped IPv6 client. Alone it is the key of a layer with `scope: 'app'`.
 */
export function ipKey(tracker: string): string {
  return `ip:${tracker}`;
}

/**
 * The default caller key of a route-scoped layer: the route ({@link routeName}, or
 * `graphql Query.items`, `ws ChatGateway.send`, `rpc MathController.sum` outside HTTP), `|`, and
 * the caller (`ip:…` by {@link ipKey}, or `apiKey:<hash>`).
 *
 * @example
 * routeKey('ItemsController.get /items/:id', ipKey('203.0.113.7'));
 * // 'ItemsController.get /items/:id|ip:203.0.113.7'
 */
export function routeKey(route: string, caller: string): string {
  return `${route}|${caller}`;
}
