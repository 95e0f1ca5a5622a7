/**
 * A horizontal bar chart as a standalone SVG, written by hand (no chart library): one bar per
 * contender, its value a ratio to a reference (the floor, or the endpoint without a limiter),
 * which is drawn as a dashed vertical line at 1.0; a whisker across a bar's end shows its 95 %
 * interval when it has one.
 */
export interface Bar {
  readonly label: string;
  readonly value: number;
  /** The 95 % interval of the value, drawn as a whisker. */
  readonly low?: number;
  readonly high?: number;
  /** Colour group: 'reference' bars are grey, 'ours' blue, 'peer' orange. */
  readonly kind: 'reference' | 'ours' | 'peer';
}

export interface BarChart {
  readonly title: string;
  readonly subtitle: string;
  /** Label of the dashed line at 1.0. */
  readonly referenceLabel: string;
  readonly bars: readonly Bar[];
}

const COLOURS: Record<Bar['kind'], string> = {
  reference: '#9e9e9e',
  ours: '#2f6fb3',
  peer: '#e07b24',
};

const LEGEND: Record<Bar['kind'], string> = {
  reference: 'reference',
  ours: 'redlimit',
  peer: 'peers',
};

const ROW = 22;
const PLOT_WIDTH = 420;
const TOP = 76;

export function barChartSvg(chart: BarChart): string {
  // About 7 px per character at 12 px, in whatever sans-serif the viewer has.
  const labelWidth = 20 + 7 * Math.max(20, ...chart.bars.map((b) => b.label.length));
  const max = Math.max(1.2, ...chart.bars.map((b) => Math.max(b.value, b.high ?? 0))) * 1.08;
  const x = (value: number) => labelWidth + (value / max) * PLOT_WIDTH;
  const height = TOP + chart.bars.length * ROW + 46;
  const width = labelWidth + PLOT_WIDTH + 70;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
      `viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="12" y="22" font-size="15" font-weight="bold">${escape(chart.title)}</text>`,
    `<text x="12" y="40" fill="#555555">${escape(chart.subtitle)}</text>`,
  ];
  const kinds = (Object.keys(COLOURS) as Array<Bar['kind']>).filter((kind) =>
    chart.bars.some((bar) => bar.kind === kind),
  );
  kinds.forEach((kind, i) => {
    const left = 12 + i * 110;
    parts.push(
      `<rect x="${left}" y="50" width="12" height="12" fill="${COLOURS[kind]}"/>`,
      `<text x="${left + 18}" y="60" fill="#333333">${LEGEND[kind]}</text>`,
    );
  });
  const bottom = TOP + chart.bars.length * ROW;
  for (let tick = 0; tick <= max; tick += 0.25) {
    const at = x(tick).toFixed(1);
    parts.push(
      `<line x1="${at}" y1="${TOP - 4}" x2="${at}" y2="${bottom}" stroke="#eeeeee"/>`,
      `<text x="${at}" y="${bottom + 14}" text-anchor="middle" fill="#777777">${tick.toFixed(2)}×</text>`,
    );
  }
  // The reference line goes under the bars and their values, so both stay readable.
  const one = x(1).toFixed(1);
  parts.push(
    `<line x1="${one}" y1="${TOP - 8}" x2="${one}" y2="${bottom + 2}" stroke="#c62828" ` +
      `stroke-width="1.5" stroke-dasharray="5 3"/>`,
    `<text x="${one}" y="${bottom + 32}" text-anchor="middle" fill="#c62828">` +
      `${escape(chart.referenceLabel)}</text>`,
  );
  chart.bars.forEach((bar, i) => {
    const y = TOP + i * ROW;
    const end = x(Math.max(0, bar.value));
    parts.push(
      `<text x="${labelWidth - 8}" y="${y + 15}" text-anchor="end">${escape(bar.label)}</text>`,
      `<rect x="${labelWidth}" y="${y + 4}" width="${(end - labelWidth).toFixed(1)}" ` +
        `height="${ROW - 8}" fill="${COLOURS[bar.kind]}"/>`,
    );
    let labelAt = end + 4;
    if (bar.low !== undefined && bar.high !== undefined) {
      const [from, to] = [x(Math.max(0, bar.low)), x(Math.max(0, bar.high))];
      const mid = y + ROW / 2;
      parts.push(
        `<path d="M${from.toFixed(1)} ${mid}H${to.toFixed(1)}M${from.toFixed(1)} ${mid - 4}` +
          `V${mid + 4}M${to.toFixed(1)} ${mid - 4}V${mid + 4}" stroke="#222222" fill="none"/>`,
      );
      labelAt = Math.max(labelAt, to + 4);
    }
    parts.push(
      `<text x="${labelAt.toFixed(1)}" y="${y + 15}" fill="#333333" stroke="#ffffff" ` +
        `stroke-width="3" paint-order="stroke">${bar.value.toFixed(2)}×</text>`,
    );
  });
  parts.push('</svg>');
  return parts.join('\n');
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
