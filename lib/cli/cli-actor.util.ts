import { userInfo } from 'node:os';

/**
 * Who acts from this command line, for the audit: `cli:<user name>`, or `cli` where the system
 * names no user.
 */
export function cliActor(): string {
  try {
    return `cli:${userInfo().username}`;
  } catch {
    return 'cli'; // no user name on this system
  }
}
