import { printable } from '../formats/printable.js';
import type { DlqEntry } from './dlq-entry.js';

/** Columns of the human table: header, cell, and the widest a cell may be (the last one is not padded). */
const COLUMNS: Array<{ title: string; cell: (entry: DlqEntry) => string; max: number }> = [
  { title: 'ID', cell: (e) => e.id ?? '-', max: 40 },
  { title: 'URL', cell: (e) => e.url ?? '-', max: 60 },
  { title: 'REASON', cell: (e) => e.reason, max: 20 },
  { title: 'ATTEMPTS', cell: (e) => (e.attempts === null ? '-' : String(e.attempts)), max: 8 },
  { title: 'STATUS', cell: (e) => (e.lastStatus === null ? '-' : String(e.lastStatus)), max: 6 },
  { title: 'AGE', cell: (e) => (e.ageSeconds === null ? '-' : formatAge(e.ageSeconds)), max: 8 },
  { title: 'LAST ERROR', cell: (e) => e.lastError ?? '-', max: 80 },
];

/**
 * The aligned table `dlq list` prints, with a footer saying how many of the queue's messages it shows.
 * `total` is the queue's message count, which may exceed `entries.length` when `--limit` cut it.
 */
export function formatDlqTable(entries: DlqEntry[], total: number, queue: string): string {
  if (entries.length === 0) return `${queue} is empty`;
  const rows = entries.map((entry) => COLUMNS.map((column) => cell(column.cell(entry), column.max)));
  const widths = COLUMNS.map((column, i) => Math.max(column.title.length, ...rows.map((row) => row[i]?.length ?? 0)));
  const line = (cells: string[]): string =>
    cells
      .map((text, i) => (i === cells.length - 1 ? text : text.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  const shown = Math.max(total, entries.length);
  const footer =
    entries.length < shown
      ? `${entries.length} of ${shown} messages in ${queue} (raise --limit to see more)`
      : `${shown} ${shown === 1 ? 'message' : 'messages'} in ${queue}`;
  return [line(COLUMNS.map((c) => c.title)), ...rows.map(line), '', footer].join('\n');
}

/** A compact age: `42s`, `7m`, `3h12m`, `2d5h`. */
export function formatAge(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86_400)}d${Math.floor((s % 86_400) / 3600)}h`;
}

/**
 * One cell: control characters become spaces, because DLQ content (the URL of an `invalid` message,
 * an error text) comes from outside and must not move the cursor or recolour the operator's
 * terminal; over-long text is cut with an ellipsis so the columns stay readable.
 */
function cell(text: string, max: number): string {
  const clean = printable(text);
  return clean.length > max ? `${clean.slice(0, max - 1)}…` : clean;
}
