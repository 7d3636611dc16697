import type { OutcomeEvent } from '../../events/outcome-events.js';
import type { WhereNow } from '../callback-timeline.js';
import { html, type Html } from '../html.js';
import { actionButton, layout, type PageFrame } from './layout.js';

export interface CallbackData {
  id: string;
  since: string;
  events: OutcomeEvent[];
  where: WhereNow | undefined;
}

const RANGES: Array<[string, string]> = [
  ['1h', 'last hour'],
  ['24h', 'last day'],
  ['all', 'whole stream'],
];

/** Search by id, then the callback's timeline from P.history and where it is now, with cancel while pending. */
export function callbackPage(frame: PageFrame, data: CallbackData): Html {
  const search = html`<form method="get" action="/callback" class="filter">
  <label>Callback id <input name="id" value="${data.id}" required></label>
  <label>Range <select name="since">${RANGES.map(([value, label]) => html`<option value="${value}"${value === data.since ? html` selected` : ''}>${label}</option>`)}</select></label>
  <button type="submit">Show</button>
</form>`;
  if (data.id === '' || data.where === undefined) return layout(frame, search);
  const status = (e: OutcomeEvent): string =>
    [e.status !== undefined ? `HTTP ${e.status}` : '', e.error !== undefined && e.error !== `HTTP ${e.status}` ? e.error : '']
      .filter(Boolean)
      .join(' ') || '–';
  return layout(
    frame,
    html`${search}
<p class="where" id="where">Now: ${data.where.text}</p>
${data.where.pending ? html`<div class="actions">${actionButton('/callback/cancel', { id: data.id }, 'Cancel this callback', frame.csrf, 'danger')}</div>` : ''}
<table class="timeline">
<thead><tr><th>Time</th><th class="num">Attempt</th><th>Outcome</th><th>Status / error</th><th class="num">Duration</th><th>Next attempt</th><th>Worker</th></tr></thead>
<tbody>
${data.events.map(
  (e) => html`<tr class="event-${e.type}">
  <td>${e.at}</td><td class="num">${e.attempt}</td><td>${e.type}${e.reason === undefined ? '' : ` (${e.reason})`}</td>
  <td class="error">${status(e)}</td><td class="num">${e.durationMs === undefined ? '–' : `${Math.round(e.durationMs)} ms`}</td>
  <td>${e.nextAttemptAt ?? '–'}</td><td>${e.worker}</td>
</tr>`,
)}
</tbody>
</table>`,
  );
}
