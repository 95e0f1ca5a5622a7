/**
 * A URL with its password replaced by `***`, for logs and error messages. Built on `URL`, and
 * conservative where `URL` would misread what a person typed: passwords pasted with an
 * unencoded `@`, `/`, `?` or `#` (`redis://u:pa/ss@host` is not a valid URL, and
 * `redis://u:1234/abc@host` parses as host `u`, port 1234 and path `/abc@host`). When the last
 * `@` of the text is not where `URL` ends the user info, everything before that `@` is treated
 * as user info: the user name is kept when it can be told apart, the rest becomes `***`.
 * Query parameters that carry a secret (`?password=`, which ioredis honours; any name with
 * `pass`, `pwd`, `secret`, `token`, `auth` or `key`) have their values masked too.
 *
 * @example
 * maskUrl('redis://:secret@cache:6379/0'); // 'redis://:***@cache:6379/0'
 * maskUrl('redis://:p@ss@host'); // 'redis://:***@host'
 * maskUrl('redis://u:pa/ss@host'); // 'redis://u:***@host'
 * maskUrl('redis://cache:6379/?password=secret'); // 'redis://cache:6379/?password=***'
 */
export function maskUrl(url: string): string {
  return maskQuerySecrets(maskUserInfo(url));
}

/** Query parameters whose name says they hold a secret. */
const SECRET_QUERY = /([?&][^=&#]*(?:pass|pwd|secret|token|auth|key)[^=&#]*=)[^&#]*/gi;

function maskQuerySecrets(url: string): string {
  return url.replace(SECRET_QUERY, '$1***');
}

function maskUserInfo(url: string): string {
  const at = url.lastIndexOf('@');
  if (at < 0) return url;
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  const userInfoEndsAtLastAt =
    parsed !== undefined &&
    parsed.host !== '' &&
    !`${parsed.pathname}${parsed.search}${parsed.hash}`.includes('@');
  if (userInfoEndsAtLastAt && parsed?.password === '') return url; // a user name at most
  // The text itself is masked (not URL's serialisation, which would add or encode characters).
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(url)?.[0] ?? '';
  const userInfo = url.slice(scheme.length, at);
  const colon = userInfo.indexOf(':');
  const user = colon >= 0 ? userInfo.slice(0, colon) : undefined;
  const shown = user !== undefined && !/[/?#]/.test(user) ? `${user}:***` : '***';
  return `${scheme}${shown}@${url.slice(at + 1)}`;
}
