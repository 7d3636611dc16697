import type { ChartPanel } from './context.js';
import type { BenchReport } from './results.js';

const WIDTH = 960;
const LABEL = 330;
const BAR_AREA = 480;
const BAR = 18;
const GAP = 6;
const COLORS = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#9c755f'];

const escape = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const number = (value: number): string =>
  Math.abs(value) >= 100 ? value.toFixed(0) : Math.abs(value) >= 10 ? value.toFixed(1) : value.toFixed(2);

/** One panel: a title, then a horizontal bar per value, scaled to the panel's largest value (or target). */
function panel(chart: ChartPanel, top: number, color: string): { svg: string; height: number } {
  const parts = [`<text x="16" y="${top + 16}" font-size="14" font-weight="bold">${escape(chart.title)}</text>`];
  const finite = chart.bars.filter((bar) => Number.isFinite(bar.value));
  const max = Math.max(1e-9, ...finite.map((bar) => bar.value), chart.target ?? 0);
  let y = top + 28;
  for (const bar of chart.bars) {
    const ok = Number.isFinite(bar.value);
    const width = ok ? Math.max(1, (Math.max(0, bar.value) / max) * BAR_AREA) : 0;
    parts.push(
      `<text x="${LABEL - 8}" y="${y + BAR - 5}" font-size="12" text-anchor="end">${escape(bar.label)}</text>`,
      `<rect x="${LABEL}" y="${y}" width="${width.toFixed(1)}" height="${BAR}" fill="${color}"/>`,
      `<text x="${LABEL + width + 6}" y="${y + BAR - 5}" font-size="12">${ok ? `${number(bar.value)} ${escape(chart.unit)}` : 'n/a'}</text>`,
    );
    y += BAR + GAP;
  }
  if (chart.target !== undefined) {
    const x = LABEL + (chart.target / max) * BAR_AREA;
    parts.push(
      `<line x1="${x.toFixed(1)}" y1="${top + 24}" x2="${x.toFixed(1)}" y2="${y - GAP + 2}" stroke="#c00" stroke-dasharray="4 3"/>`,
      `<text x="${(x + 4).toFixed(1)}" y="${top + 24}" font-size="11" fill="#c00">target ${number(chart.target)} ${escape(chart.unit)}</text>`,
    );
  }
  return { svg: parts.join('\n'), height: y - top + 14 };
}

/** A self-contained SVG of every scenario's chart panels, stacked, with the machine in the header. */
export function renderChart(report: BenchReport): string {
  const machine = report.machine as { cpus?: number; cpuModel?: string; node?: string; rabbitmq?: string };
  const header = `callback-relay benchmarks ${report.quick ? '(quick)' : '(full)'} — ${report.startedAt.slice(0, 19)}Z — ${machine.cpus} × ${machine.cpuModel}, Node ${machine.node}, RabbitMQ ${machine.rabbitmq}`;
  const body: string[] = [];
  let top = 44;
  let index = 0;
  for (const [name, result] of Object.entries(report.scenarios)) {
    for (const chart of result.charts) {
      const drawn = panel({ ...chart, title: `${name}: ${chart.title}` }, top, COLORS[index % COLORS.length] as string);
      body.push(drawn.svg);
      top += drawn.height;
      index += 1;
    }
  }
  const height = top + 10;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="Helvetica, Arial, sans-serif">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="16" y="26" font-size="15">${escape(header)}</text>`,
    ...body,
    '</svg>',
    '',
  ].join('\n');
}
