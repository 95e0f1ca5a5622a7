/**
 * A reader of Prometheus text exposition format (what `registry.metrics()` returns), enough for
 * the metrics specs: samples with their labels, and sums over a label filter.
 */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Every sample of the exposition text (comments skipped). */
export function parseSamples(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? '').matchAll(LABEL)) labels[name!] = value!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The sum of the samples of `name` whose labels include `where` (0 when there are none). */
export function sampleSum(
  samples: readonly Sample[],
  name: string,
  where: Readonly<Record<string, string>> = {},
): number {
  return samples
    .filter((s) => s.name === name && Object.entries(where).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/** Per value of `label`, the sum of the samples of `name` (e.g. decision counts by outcome). */
export function sumsBy(
  samples: readonly Sample[],
  name: string,
  label: string,
  where: Readonly<Record<string, string>> = {},
): Record<string, number> {
  const sums: Record<string, number> = {};
  for (const s of samples) {
    if (s.name !== name || !Object.entries(where).every(([k, v]) => s.labels[k] === v)) continue;
    const key = s.labels[label] ?? '';
    sums[key] = (sums[key] ?? 0) + s.value;
  }
  return sums;
}
