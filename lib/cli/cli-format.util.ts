export { formatLimits, formatWait, formatWindow } from '../core/format.util';

/**
 * Rows of text as left-aligned columns, two spaces apart, each row indented by `indent`.
 *
 * @example
 * columns([['a', 'bb'], ['ccc', 'd']]); // 'a    bb\nccc  d'
 */
export function columns(rows: readonly (readonly string[])[], indent = ''): string {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  }
  return rows
    .map((row) =>
      (
        indent +
        row.map((cell, i) => (i < row.length - 1 ? cell.padEnd(widths[i]!) : cell)).join('  ')
      ).trimEnd(),
    )
    .join('\n');
}
