import type { DlqEntry } from '../../dlq/dlq-entry.js';
import type { DeadFilter, DeadGroup } from '../dead-groups.js';
import { href, html, type Html } from '../html.js';
import { actionButton, csrfField, layout, type PageFrame } from './layout.js';

export interface DeadLettersData {
  queue: string;
  /** Ready messages in P.dead. */
  total: number;
  /** Messages looked at (CONSOLE_DEAD_SCAN at most). */
  scanned: number;
  groups: DeadGroup[];
  /** The looked-at entries that pass the filter. */
  entries: DlqEntry[];
  filter: DeadFilter;
  query: Record<string, string | undefined>;
}

/** P.dead grouped by target and reason, filterable, with replay and purge. */
export function deadLettersPage(frame: PageFrame, data: DeadLettersData): Html {
  const q = data.query;
  const replayAll = actionButton('/dead-letters/replay', { all: '1' }, `Replay all ${data.scanned} looked at`, frame.csrf);
  return layout(
    frame,
    html`<p class="hint">${data.total} message(s) in ${data.queue}; the first ${data.scanned} looked at (CONSOLE_DEAD_SCAN), each put back untouched.</p>
<div class="actions">${data.scanned > 0 ? replayAll : ''} ${data.total > 0 ? html`<a class="button danger" href="/dead-letters/purge">Purge…</a>` : ''}</div>
<h2>By target and reason</h2>
<table class="groups">
<thead><tr><th>Target</th><th>Reason</th><th class="num">Count</th><th>Newest</th><th></th></tr></thead>
<tbody>
${data.groups.map(
  (g) => html`<tr data-origin="${g.origin ?? ''}" data-reason="${g.reason}">
  <td>${g.origin ?? '(no URL)'}</td><td>${g.reason}</td><td class="num">${g.count}</td><td>${g.newest ?? '–'}</td>
  <td>${actionButton('/dead-letters/replay', { origin: g.origin ?? '', reason: g.reason, group: '1' }, `Replay ${g.count}`, frame.csrf)} <a href="${href('/dead-letters', { url: g.origin ?? undefined, reason: g.reason })}">show</a></td>
</tr>`,
)}
</tbody>
</table>
<h2>Messages</h2>
<form method="get" action="/dead-letters" class="filter">
  <label>Id <input name="id" value="${q.id ?? ''}"></label>
  <label>URL <input name="url" value="${q.url ?? ''}"></label>
  <label>Reason <input name="reason" value="${q.reason ?? ''}"></label>
  <label>From <input name="from" value="${q.from ?? ''}" placeholder="2026-01-31T12:00Z"></label>
  <label>To <input name="to" value="${q.to ?? ''}"></label>
  <button type="submit">Filter</button> <a href="/dead-letters">clear</a>
</form>
<form method="post" action="/dead-letters/replay" id="selection">
${csrfField(frame.csrf)}
<table class="messages">
<thead><tr><th></th><th>Id</th><th>URL</th><th>Reason</th><th class="num">Attempts</th><th class="num">Status</th><th>Parked</th><th>Last error</th></tr></thead>
<tbody>
${data.entries.map(
  (e) => html`<tr>
  <td>${e.id === null ? '' : html`<input type="checkbox" name="id" value="${e.id}" aria-label="select ${e.id}">`}</td>
  <td>${e.id === null ? '–' : html`<a href="${href('/dead-letters/message', { id: e.id })}">${e.id}</a>`}</td>
  <td class="url">${e.url ?? '–'}</td><td>${e.reason}</td>
  <td class="num">${e.attempts ?? '–'}</td><td class="num">${e.lastStatus ?? '–'}</td>
  <td>${e.since ?? '–'}</td><td class="error">${e.lastError ?? '–'}</td>
</tr>`,
)}
</tbody>
</table>
${data.entries.length === 0 ? html`<p class="empty">No message matches.</p>` : html`<button type="submit" id="replay-selected">Replay selected</button>`}
</form>`,
  );
}

/** One message of P.dead: its record, body and headers, all shown as text. */
export function deadMessagePage(frame: PageFrame, entry: DlqEntry, body: string, headers: Record<string, unknown>): Html {
  return layout(
    frame,
    html`<dl class="record">
  <dt>Id</dt><dd>${entry.id ?? '–'}</dd><dt>URL</dt><dd>${entry.url ?? '–'}</dd><dt>Reason</dt><dd>${entry.reason}</dd>
  <dt>Attempts</dt><dd>${entry.attempts ?? '–'}</dd><dt>Last status</dt><dd>${entry.lastStatus ?? '–'}</dd>
  <dt>Last error</dt><dd>${entry.lastError ?? '–'}</dd><dt>Parked</dt><dd>${entry.since ?? '–'}</dd>
</dl>
<div class="actions">${entry.id === null ? '' : actionButton('/dead-letters/replay', { id: entry.id }, 'Replay this callback', frame.csrf)} ${entry.id === null ? '' : html`<a href="${href('/callback', { id: entry.id })}">timeline</a>`}</div>
<h2>Body</h2>
<pre class="body" id="body">${body}</pre>
<h2>Headers</h2>
<table class="headers"><tbody>
${Object.entries(headers).map(([name, value]) => html`<tr><th>${name}</th><td><code>${headerText(value)}</code></td></tr>`)}
</tbody></table>`,
  );
}

/** The confirmation of a purge: it names the count, and the purge removes only that many. */
export function purgeConfirmPage(frame: PageFrame, queue: string, count: number): Html {
  return layout(
    frame,
    count === 0
      ? html`<p>${queue} is empty.</p>`
      : html`<p>Purge the <strong id="purge-count">${count}</strong> oldest message(s) from ${queue}? They are deleted for good; messages parked after this page was shown are kept.</p>
<div class="actions">${actionButton('/dead-letters/purge', { count: String(count) }, `Purge ${count} message(s)`, frame.csrf, 'danger')} <a href="/dead-letters">Cancel</a></div>`,
  );
}

/** A header's value as text: strings as they are, the rest (numbers, tables of x-death) as JSON. */
function headerText(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) ?? String(value);
  } catch {
    return String(value);
  }
}
