import type { PolicyChange, PolicyOverride } from '../core/overrides';
import type { Limiter } from '../core/limiter';
import type { BoardBook } from '../stores/board-book';

/** One request to the ops board, as an adapter (Nest on Express or Fastify, the CLI) hands it over. */
export interface BoardRequest {
  /** `GET` or `POST` (anything else is refused with 405). */
  readonly method: string;
  /** The route below the board's path, without slashes at either end: `''`, `refusing`, … */
  readonly route: string;
  /** The board's path as the browser sees it, without a trailing slash (`''` at the root). */
  readonly base: string;
  /** The query string's parameters (the first value of each). */
  readonly query: Readonly<Record<string, string | undefined>>;
  /** Request headers, names in lower case. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** A POST's form fields (`application/x-www-form-urlencoded`), parsed. */
  readonly body?: Readonly<Record<string, unknown>>;
  /** Whether the browser reached the board over HTTPS (the CSRF cookie is then `Secure`). */
  readonly secure: boolean;
  /** Who is asking, for the audit (the app's `actor` hook; `board` when it has none). */
  readonly actor: string;
}

/** The board's answer. */
export interface BoardResponse {
  /** HTTP status. */
  readonly status: number;
  /** Response headers (`set-cookie` may hold several). */
  readonly headers: Readonly<Record<string, string | readonly string[]>>;
  /** The body. */
  readonly body: string;
}

/** Where the board reads its figures and acts. */
export interface BoardSource {
  /** The store's board book. */
  readonly book: BoardBook;
  /** The limiters the board may peek and unlock with (the app's; the CLI's from its config). */
  limiters(): readonly Limiter[];
  /** The app's `keySecret`, to find keys from identities as the app hashes them (never shown). */
  readonly keySecret?: string;
  /** The app's client IP resolver (IPv6 grouping), for IP look-ups. */
  readonly clientIp?: (address: string) => string | undefined;
  /** Where actions are taken from, for the audit: `board` (an app) or `cli` (`redlimit board`). */
  readonly via: string;
  /** The live policy overrides stored now (see `PolicyOverrides`), listed on the Policies page. */
  readonly overrides?: () => Promise<readonly PolicyOverride[]>;
  /** Stores an override of one of {@link limiters}' policies (validated as a policy is). */
  readonly setOverride?: (
    policy: string,
    change: PolicyChange,
    options: { scope: string; until?: number; actor: string; reason?: string },
  ) => Promise<PolicyOverride>;
  /** Removes the override of a policy for a scope; resolves whether there was one. */
  readonly clearOverride?: (
    policy: string,
    options: { scope: string; actor: string },
  ) => Promise<boolean>;
}
