import type { DlqEntry } from '../../dlq/dlq-entry.js';
import { CANCELED_REASON } from '../../dlq/replay-shown.js';
import { entryOrigin } from '../../dlq/select-for-replay.js';
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
  /** Every looked-at entry (the groups are of these). */
  scannedEntries: DlqEntry[];
  /** The looked-at entries that pass the filter. */
  entries: DlqEntry[];
  filter: DeadFilter;
  query: Record<string, string | undefined>;
}

/** The ids of shown entries that have one: what a form posts, one per message. */
const idsOf = (entries: readonly DlqEntry[]): string[] => entries.flatMap((e) => (e.id === null ? [] : [e.id]));

/**
 * A form replaying exactly `entries` (those with an id): it posts their ids and how many, and the
 * replay refuses if P.dead no longer holds them all. Canceled ones are skipped unless its box is ticked.
 */
function replayShownForm(entries: readonly DlqEntry[], label: string, csrf: string | undefined, cls: string): Html {
  const ids = idsOf(entries);
  const canceled = entries.filter((e) => e.id !== null && e.reason === CANCELED_REASON).length;
  return html`<form method="post" action="/dead-letters/replay" class="inline ${cls}">${csrfField(csrf)}<input type="hidden" name="count" value="${ids.length}">${ids.map((id) => html`<input type="hidden" name="id" value="${id}">`)}${
    canceled > 0
      ? html`<label class="include-canceled"><input type="checkbox" name="canceled" value="1"> include the ${canceled} canceled</label> `
      : ''
  }<button type="submit"${ids.length === 0 ? ' disabled' : ''}>${label}</button></form>`;
}

/** P.dead grouped by target and reason, filterable, with replay and purge. */
export function deadLettersPage(frame: PageFrame, data: DeadLettersData): Html {
  const q = data.query;
  const shownWithId = idsOf(data.entries).length;
  const replayAll = replayShownForm(data.entries, `Replay all ${shownWithId} shown`, frame.csrf, 'replay-all');
  const ofGroup = (g: DeadGroup): DlqEntry[] => data.scannedEntries.filter((e) => e.reason === g.reason && entryOrigin(e) === g.origin);
  return layout(
    frame,
    html`<p class="hint">${data.total} message(s) in ${data.queue}; the first ${data.scanned} looked at (CONSOLE_DEAD_SCAN), each put back untouched. A replay or purge acts on exactly the messages shown here.</p>
<div class="actions">${shownWithId > 0 ? replayAll : ''} ${data.total > 0 ? html`<a class="button danger" href="/dead-letters/purge">Purge…</a>` : ''}</div>
<h2>By target and reason</h2>
<table class="groups">
<thead><tr><th>Target</th><th>Reason</th><th class="num">Count</th><th>Newest</th><th></th></tr></thead>
<tbody>
${data.groups.map(
  (g) => html`<tr data-origin="${g.origin ?? ''}" data-reason="${g.reason}">
  <td>${g.origin ?? '(no URL)'}</td><td>${g.reason}</td><td class="num">${g.count}</td><td>${g.newest ?? '–'}</td>
  <td>${replayShownForm(ofGroup(g), `Replay ${idsOf(ofGroup(g)).length}`, frame.csrf, 'replay-group')} <a href="${href('/dead-letters', { url: g.origin ?? undefined, reason: g.reason })}">show</a></td>
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
${csrfField(frame.csrf)}<input type="hidden" name="selected" value="1">
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
<div class="actions">${entry.id === null ? '' : actionButton('/dead-letters/replay', { id: entry.id, selected: '1' }, 'Replay this callback', frame.csrf)} ${entry.id === null ? '' : html`<a href="${href('/callback', { id: entry.id })}">timeline</a>`}</div>
<h2>Body</h2>
<pre class="body" id="body">${body}</pre>
<h2>Headers</h2>
<table class="headers"><tbody>
${Object.entries(headers).map(([name, value]) => html`<tr><th>${name}</th><td><code>${headerText(value)}</code></td></tr>`)}
</tbody></table>`,
  );
}

/**
 * The confirmation of a purge: it lists the messages it will delete (the first CONSOLE_DEAD_SCAN with
 * a callback id), and the form posts their ids, so the purge deletes exactly those or nothing.
 */
export function purgeConfirmPage(frame: PageFrame, queue: string, total: number, entries: readonly DlqEntry[]): Html {
  const ids = idsOf(entries);
  const withoutId = entries.length - ids.length;
  const rest = Math.max(0, total - entries.length);
  if (ids.length === 0)
    return layout(
      frame,
      html`<p>${total === 0 ? `${queue} is empty.` : `No message of ${queue} looked at has a callback id: purge them with \`callback-relay dlq purge\`.`}</p>`,
    );
  return layout(
    frame,
    html`<p>Purge these <strong id="purge-count">${ids.length}</strong> message(s) from ${queue}? They are deleted for good. Only these: a message parked after this page was shown stays${
      rest > 0 ? html`, and so do the other ${rest} not looked at (CONSOLE_DEAD_SCAN)` : ''
    }${withoutId > 0 ? html`, and the ${withoutId} without a callback id (\`callback-relay dlq purge\` removes them)` : ''}. If some are no longer in ${queue}, nothing is purged.</p>
<form method="post" action="/dead-letters/purge" class="inline purge">${csrfField(frame.csrf)}<input type="hidden" name="count" value="${ids.length}">${ids.map((id) => html`<input type="hidden" name="id" value="${id}">`)}<button type="submit" class="danger">Purge ${ids.length} message(s)</button></form> <a href="/dead-letters">Cancel</a>
<table class="messages purge-list">
<thead><tr><th>Id</th><th>URL</th><th>Reason</th><th>Parked</th></tr></thead>
<tbody>
${entries.filter((e) => e.id !== null).map((e) => html`<tr><td>${e.id ?? ''}</td><td class="url">${e.url ?? '–'}</td><td>${e.reason}</td><td>${e.since ?? '–'}</td></tr>`)}
</tbody>
</table>`,
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
