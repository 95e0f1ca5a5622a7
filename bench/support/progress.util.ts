/**
 * A one-line progress bar on stderr, redrawn in place; silent when stderr is not a terminal, so
 * logs and CI output stay clean.
 */
export class ProgressBar {
  private done = 0;
  private readonly enabled = process.stderr.isTTY === true;

  constructor(private readonly total: number) {}

  /** Counts one step done and shows what comes next. */
  tick(label = ''): void {
    this.done = Math.min(this.total, this.done + 1);
    this.show(label);
  }

  /** Shows what runs now without counting a step. */
  show(label: string): void {
    if (!this.enabled) return;
    const width = 24;
    const filled = Math.round((this.done / this.total) * width);
    const percent = String(Math.round((this.done / this.total) * 100)).padStart(3);
    const line = `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${percent}% ${label}`;
    const columns = process.stderr.columns || 100;
    process.stderr.write(`\r${line.slice(0, columns - 1).padEnd(columns - 1)}`);
  }

  /** Clears the line. */
  end(): void {
    if (this.enabled)
      process.stderr.write(`\r${' '.repeat((process.stderr.columns || 100) - 1)}\r`);
  }
}
