import { html, type Html } from '../html.js';
import type { TargetRow } from '../target-rows.js';
import { actionButton, layout, ms, percent, type PageFrame } from './layout.js';

/** Every origin seen in the window, the most troubled first, with pause and resume. */
export function targetsPage(frame: PageFrame, rows: readonly TargetRow[], windowMinutes: number, forgotten: number): Html {
  return layout(
    { ...frame, refreshSeconds: 30 },
    html`<p class="hint">Origins with an outcome in the last ${windowMinutes} minutes, and every paused origin; paused first, then open circuits, then limited ones, then by failure rate.${forgotten > 0 ? ` ${forgotten} origin(s) were forgotten past CONSOLE_MAX_TARGETS.` : ''}</p>
<table class="targets">
<thead><tr><th>Target</th><th>State</th><th class="num">Success</th><th class="num">Delivered</th><th class="num">Retries</th><th class="num">Dead</th><th class="num">Held</th><th class="num">p50</th><th class="num">p95</th><th>Last error</th><th></th></tr></thead>
<tbody>
${rows.map(
  (row) => html`<tr data-origin="${row.origin}" class="state-${row.state.replace(' ', '-')}">
  <td class="origin">${row.origin}</td>
  <td><span class="badge ${row.state.replace(' ', '-')}">${row.state}</span></td>
  <td class="num">${percent(row.successRate)}</td>
  <td class="num">${row.delivered}</td>
  <td class="num">${row.retries}</td>
  <td class="num">${row.dead}</td>
  <td class="num">${row.held}</td>
  <td class="num">${ms(row.p50Ms)}</td>
  <td class="num">${ms(row.p95Ms)}</td>
  <td class="error">${row.lastError === null ? '–' : html`${row.lastError.text} <span class="when">${row.lastError.at}</span>`}</td>
  <td>${row.state === 'paused' ? actionButton('/targets/resume', { origin: row.origin }, 'Resume', frame.csrf) : actionButton('/targets/pause', { origin: row.origin }, 'Pause', frame.csrf, 'danger')}</td>
</tr>`,
)}
</tbody>
</table>
${rows.length === 0 ? html`<p class="empty">No outcome in the window yet.</p>` : ''}
<p class="hint">In flight per target is not shown: workers do not publish it (see their /metrics).</p>`,
  );
}
