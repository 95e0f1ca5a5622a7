// Cookies on any Node, Express or Fastify request and response, without a cookie parser.
import type { HttpResponseLike } from './http-request.util';

/** Every value of the cookies named `name` in a `Cookie` header (quotes removed), in order. */
export function cookieValues(header: string | string[] | undefined, name: string): string[] {
  const text = Array.isArray(header) ? header.join('; ') : header;
  if (typeof text !== 'string') return [];
  const values: string[] = [];
  for (const pair of text.split(';')) {
    const at = pair.indexOf('=');
    if (at < 0 || pair.slice(0, at).trim() !== name) continue;
    let value = pair.slice(at + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) {
      value = value.slice(1, -1);
    }
    if (value !== '') values.push(value);
  }
  return values;
}

/** Adds a `Set-Cookie` line without replacing others (Express `append`, Fastify `header`, Node). */
export function appendSetCookie(response: HttpResponseLike, line: string): void {
  const target = response as HttpResponseLike & {
    append?(name: string, value: string): unknown;
    getHeader?(name: string): unknown;
  };
  if (typeof target.append === 'function') {
    target.append('Set-Cookie', line); // Express
  } else if (typeof target.header === 'function') {
    target.header('set-cookie', line); // Fastify keeps every set-cookie value
  } else if (typeof target.setHeader === 'function') {
    const existing = target.getHeader?.('set-cookie');
    const lines = Array.isArray(existing)
      ? [...(existing as string[]), line]
      : typeof existing === 'string'
        ? [existing, line]
        : [line];
    (target.setHeader as unknown as (name: string, value: string[]) => unknown)(
      'Set-Cookie',
      lines,
    );
  }
}
