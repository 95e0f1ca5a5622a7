import { maskUrl } from '../../lib/config/mask-url.util';

describe('maskUrl: no password survives, whatever the URL looks like', () => {
  it.each([
    ['a plain password', 'redis://:secret@cache:6379/0', 'redis://:***@cache:6379/0'],
    [
      'user and password',
      'rediss://default:s3cr3t@cache.example.com:6380',
      'rediss://default:***@cache.example.com:6380',
    ],
    ["an unencoded '@' in the password", 'redis://:p@ss@host', 'redis://:***@host'],
    ["an unencoded '/' in the password", 'redis://u:pa/ss@host', 'redis://u:***@host'],
    [
      "a password of digits then '/' (parses as a port)",
      'redis://u:1234/abc@host:6379',
      'redis://u:***@host:6379',
    ],
    ["an unencoded '?' and '#' in the password", 'redis://u:a?b#c@host', 'redis://u:***@host'],
    ['no password', 'redis://cache:6379', 'redis://cache:6379'],
    ['a username only', 'redis://admin@cache:6379', 'redis://admin@cache:6379'],
    ['an encoded password', 'redis://u:p%40ss@host/2', 'redis://u:***@host/2'],
    ['an empty password', 'redis://u:@host', 'redis://u:@host'],
    ['userinfo that cannot be split', 'redis://to/ken@host', 'redis://***@host'],
    ['not a URL, no credentials', 'localhost:6379', 'localhost:6379'],
    ['not a URL, with credentials', 'ftp//x:y@host', '***@host'],
  ])('%s: %s → %s', (_title, url, masked) => {
    expect(maskUrl(url)).toBe(masked);
    expect(maskUrl(url)).not.toMatch(/secret|s3cr3t|p@ss|pa\/ss|1234|abc|p%40ss|a\?b/);
  });
});

describe('maskUrl: secrets in the query string', () => {
  it.each([
    ['redis://cache:6379/?password=s3cret', 'redis://cache:6379/?password=***'],
    ['redis://cache:6379/0?db=1&password=s3cret&x=1', 'redis://cache:6379/0?db=1&password=***&x=1'],
    ['rediss://:pw@cache/?tls=1&authToken=abc', 'rediss://:***@cache/?tls=1&authToken=***'],
    ['redis://cache:6379/?db=2', 'redis://cache:6379/?db=2'],
  ])('%s → %s', (url, masked) => {
    expect(maskUrl(url)).toBe(masked);
  });
});
