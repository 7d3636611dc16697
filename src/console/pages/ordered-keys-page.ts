import { href, html, type Html } from '../html.js';
import type { OrderedKeyRow, ShardKeys } from '../ordered-shards.js';
import { layout, type PageFrame } from './layout.js';

/** A key as one shell word: quoted unless it is plainly safe (keys are printable ASCII, spaces and quotes included). */
export function shellWord(text: string): string {
  return /^[\w.,:@%+=/-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

function stateCell(row: OrderedKeyRow): Html {
  switch (row.state) {
    case 'stopped':
      return html`<span class="badge stopped">stopped</span> — replay its <a href="${href('/dead-letters', { id: row.head })}">dead letter</a> or run <code>callback-relay ordered release ${shellWord(row.key)}</code>`;
    case 'held':
      return html`<span class="badge held">held</span> — its head waits for a retry`;
    case 'draining':
      return html`<span class="badge draining">moving on</span> — its callbacks in the log run one at a time`;
  }
}

function shardSection(shard: ShardKeys): Html {
  return html`<section class="shard" data-shard="${shard.shard}">
<h2>Shard ${shard.shard} <span class="hint">${shard.queue} · log ${shard.stream}</span></h2>
${shard.error === undefined ? '' : html`<p class="notice error">Its log could not be read: ${shard.error}</p>`}
${
  shard.keys.length === 0
    ? ''
    : html`<table class="ordered-keys">
<thead><tr><th>Key</th><th>Held by</th><th>State</th><th class="num">Waiting in the log</th></tr></thead>
<tbody>
${shard.keys.map(
  (row) => html`<tr data-key="${row.key}" class="state-${row.state}">
  <td class="key">${row.key}</td>
  <td class="id">${row.head === undefined ? '–' : html`<a href="${href('/callback', { id: row.head })}">${row.head}</a>`}</td>
  <td class="state">${stateCell(row)}</td>
  <td class="num logged">${row.logged}</td>
</tr>`,
)}
</tbody>
</table>`
}
</section>`;
}

/**
 * The keys of ordered callbacks (orderKey) held now, per shard, as each shard's log says: the callback
 * holding each, whether it is stopped (ORDERED_ON_DEAD=stop) and how many callbacks wait in the log
 * behind it; with the counts of held and stopped keys. Read only: no form.
 */
export function orderedKeysPage(frame: PageFrame, shards: readonly ShardKeys[]): Html {
  const rows = shards.flatMap((shard) => shard.keys);
  const count = (state: OrderedKeyRow['state']): number => rows.filter((row) => row.state === state).length;
  const logged = rows.reduce((total, row) => total + row.logged, 0);
  const shown = shards.filter((shard) => shard.keys.length > 0 || shard.error !== undefined);
  const quiet = shards.length - shown.length;
  return layout(
    { ...frame, refreshSeconds: 30 },
    html`<section class="tiles">
  <div class="tile"><span class="value" id="held">${count('held')}</span><span class="label">keys held, waiting for a retry</span></div>
  <div class="tile"><span class="value" id="stopped">${count('stopped')}</span><span class="label">keys stopped at a dead letter</span></div>
  <div class="tile"><span class="value" id="logged">${logged}</span><span class="label">callbacks waiting in the logs</span></div>
</section>
${shown.map(shardSection)}
${rows.length === 0 ? html`<p class="empty">No key is held${shards.some((shard) => shard.error !== undefined) ? ' in the logs that could be read' : ''}.</p>` : ''}
<p class="hint">${quiet > 0 ? `${quiet} of ${shards.length} shard(s) hold no key and are not listed. ` : ''}Each shard's log (P.ordered.log.&lt;n&gt;) is read from its start on every load, up to where it falls quiet; the console never writes to it. A key stopped with ORDERED_ON_DEAD=stop stays so until its dead letter is replayed or it is released.</p>`,
  );
}
