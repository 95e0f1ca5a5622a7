// HTML for the ops board: escaping, the page frame, small forms. Every value that did not come
// from this file goes through `text()` (or `attr()` inside attribute values).

/**
 * Markup that is already safe: only this file makes it (from escaped parts), so no value from the
 * store or a request can pass for it, whatever its shape.
 */
export class Html {
  /** @internal */
  constructor(readonly html: string) {}
}

/** Safe markup from a template: interpolated strings and numbers are escaped, Html is kept. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!;
  values.forEach((value, i) => {
    out += render(value) + strings[i + 1]!;
  });
  return new Html(out);
}

/** Several pieces of markup, one after the other. */
export function join(parts: readonly Html[], separator: Html | string = ''): Html {
  const between = typeof separator === 'string' ? text(separator) : separator.html;
  return new Html(parts.map((part) => part.html).join(between));
}

function render(value: unknown): string {
  if (value === undefined || value === null || value === false) return '';
  if (Array.isArray(value)) return value.map(render).join('');
  if (value instanceof Html) return value.html;
  if (typeof value === 'string') return text(value);
  return typeof value === 'number' || typeof value === 'boolean' ? text(String(value)) : '';
}

/** A string as HTML text or attribute value (quotes included). */
export function text(value: string): string {
  return value.replace(/[&<>"'`]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The board's pages, in the order of its navigation. */
export const PAGES = [
  ['', 'Policies'],
  ['refusing', 'Refusing now'],
  ['locked', 'Locked out'],
  ['key', 'A key'],
  ['shadow', 'Shadow'],
  ['audit', 'Audit'],
] as const;

/** A page's route (relative to the board's path). */
export type PageRoute = (typeof PAGES)[number][0];

/** What every page shows around its content. */
export interface Frame {
  /** The board's path as the browser sees it (no trailing slash): links start with it. */
  readonly base: string;
  /** The page's route. */
  readonly page: PageRoute;
  /** The page's heading. */
  readonly title: string;
  /** Whether actions are hidden (read-only mode). */
  readonly readOnly: boolean;
  /** The store's clock when the page was made (ms since 1970). */
  readonly now: number;
  /** Seconds between refreshes of the content with scripts on (0: none). */
  readonly refreshSeconds: number;
}

/** A whole page. */
export function page(frame: Frame, content: Html): string {
  const nav = join(
    PAGES.map(([route, name]) => {
      const href = route === '' ? frame.base || '/' : `${frame.base}/${route}`;
      return route === frame.page
        ? html`<a href="${href}" aria-current="page">${name}</a>`
        : html`<a href="${href}">${name}</a>`;
    }),
  );
  const mode = frame.readOnly ? html`<span class="mode">read-only</span>` : html``;
  return (
    '<!doctype html>\n' +
    html`<html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <title>${frame.title} · redlimit</title>
        <link rel="stylesheet" href="${frame.base}/assets/board.css" />
        <script src="${frame.base}/assets/board.js" defer></script>
      </head>
      <body>
        <header>
          <a class="brand" href="${frame.base || '/'}">redlimit</a>
          <nav>${nav}</nav>
          ${mode}
        </header>
        <main id="main" data-refresh="${frame.refreshSeconds}">
          <h1>${frame.title}</h1>
          ${content}
          <p class="clock">Store clock ${isoTime(frame.now)}</p>
        </main>
      </body>
    </html> `.html
  );
}

/** A time on the store's clock, as ISO 8601 UTC to the second. */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A form that POSTs to one of the board's routes with the CSRF token and some fields. */
export function postForm(
  base: string,
  route: string,
  csrf: string,
  fields: Readonly<Record<string, string>>,
  button: string,
  options: { readonly confirm?: string; readonly className?: string } = {},
): Html {
  const inputs = join(
    Object.entries(fields).map(
      ([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`,
    ),
  );
  return html`<form
    method="post"
    action="${base}/${route}"
    class="${options.className ?? 'inline'}"
    ${options.confirm ? html` data-confirm="${options.confirm}"` : html``}
  >
    <input type="hidden" name="csrf" value="${csrf}" />${inputs}<button type="submit">
      ${button}
    </button>
  </form>`;
}

/** A table from a header row and rows of cells. */
export function table(
  head: readonly string[],
  rows: readonly (readonly (Html | string | number)[])[],
): Html {
  if (rows.length === 0) return html`<p class="empty">Nothing to show.</p>`;
  return html`<table>
    <thead>
      <tr>
        ${head.map((h) => html`<th>${h}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (row) =>
          html`<tr>
            ${row.map((cell) => html`<td>${cell}</td>`)}
          </tr>`,
      )}
    </tbody>
  </table>`;
}
