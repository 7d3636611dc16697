import type { MinuteCounts } from '../event-window.js';
import { html, jsonData, type Html } from '../html.js';
import type { QueueDepth } from '../queue-depths.js';
import { layout, type PageFrame } from './layout.js';

export interface OverviewData {
  series: Array<{ minute: number } & MinuteCounts>;
  queues: QueueDepth[];
  /** Deliveries in the current minute so far and in the last full one. */
  throughput: { current: number; previous: number };
  targets: number;
  historyMissing: boolean;
  /** Still reading P.history up to the present (a replica just started). */
  historyReading: boolean;
  windowMinutes: number;
}

/**
 * The overview: deliveries, retries and dead letters per minute (the chart is drawn by
 * /assets/overview.js with uPlot from the data block), the queues' depths and the workers connected.
 */
export function overviewPage(frame: PageFrame, data: OverviewData): Html {
  const lanes = data.queues.filter((q) => q.kind === 'lane');
  // Every worker consumes every lane, so the busiest lane's consumer count is the workers connected.
  const workers = lanes.reduce((most, lane) => Math.max(most, lane.consumers), 0);
  const sum = (key: keyof MinuteCounts): number => data.series.reduce((total, row) => total + row[key], 0);
  const chart = {
    t: data.series.map((row) => row.minute / 1000),
    delivered: data.series.map((r) => r.delivered),
    retries: data.series.map((r) => r.retries),
    dead: data.series.map((r) => r.dead),
  };
  const isLevel = (q: QueueDepth): boolean => q.kind === 'delay level' || q.kind === 'earlier delay level';
  const shown = data.queues.filter((q) => !isLevel(q) || q.messages > 0);
  // An upgrade leaves the earlier version's levels to drain; once they are empty an operator deletes them.
  const earlier = data.queues.filter((q) => q.kind === 'earlier delay level');
  const earlierEmpty = earlier.length > 0 && earlier.every((q) => q.messages === 0);
  const earlierHint = earlierEmpty ? ' The delay levels of an earlier version are empty: they can be deleted (docs/delay-modes.md).' : '';
  const notice = data.historyMissing
    ? {
        text: 'P.history does not exist: run the workers with HISTORY=on (and EVENTS=on or durable) to see deliveries here.',
        kind: 'warn' as const,
      }
    : data.historyReading
      ? { text: `Still reading the last ${data.windowMinutes} minutes of P.history: the counts are still growing.`, kind: 'warn' as const }
      : frame.notice;
  return layout(
    {
      ...frame,
      notice,
      refreshSeconds: 30,
      scripts: ['/assets/uPlot.iife.min.js', '/assets/overview.js'],
      styles: ['/assets/uPlot.min.css'],
    },
    html`<section class="tiles">
  <div class="tile"><span class="value" id="throughput">${data.throughput.current}</span><span class="label">delivered this minute (${data.throughput.previous} the minute before)</span></div>
  <div class="tile"><span class="value" id="workers">${workers}</span><span class="label">workers connected</span></div>
  <div class="tile"><span class="value" id="delivered">${sum('delivered')}</span><span class="label">delivered (${data.windowMinutes} min)</span></div>
  <div class="tile"><span class="value" id="retries">${sum('retries')}</span><span class="label">retries (${data.windowMinutes} min)</span></div>
  <div class="tile"><span class="value" id="dead">${sum('dead')}</span><span class="label">dead letters (${data.windowMinutes} min)</span></div>
  <div class="tile"><span class="value">${data.targets}</span><span class="label">targets seen</span></div>
</section>
<h2>Per minute, last ${data.windowMinutes} minutes</h2>
<div id="chart" class="chart"></div>
<script type="application/json" id="chart-data">${jsonData(chart)}</script>
<h2>Queues</h2>
<table class="queues">
<thead><tr><th>Queue</th><th>Kind</th><th class="num">Ready messages</th><th class="num">Consumers</th></tr></thead>
<tbody>
${shown.map((q) => html`<tr><td>${q.queue}</td><td>${q.kind}</td><td class="num">${q.messages}</td><td class="num">${q.consumers}</td></tr>`)}
</tbody>
</table>
<p class="hint">Delay levels, and those of an earlier version, are listed when they hold messages.${earlierHint} Depths are the broker's counts of ready messages, by passive declare.</p>`,
  );
}
