import { formatDuration } from './duration.js';
import { configSchema } from './schema.js';

type Entry = { doc: string; format: unknown; default: unknown; env: string; defaultText?: string };

function shownDefault(entry: Entry): string {
  const { format, default: value } = entry;
  if (entry.defaultText !== undefined) return entry.defaultText;
  if (value === '') return '(empty)';
  if (format === 'duration' || format === 'positive-duration') return formatDuration(value as number);
  if (format === 'duration-list') return (value as number[]).map(formatDuration).join(',');
  return String(value);
}

/** The Markdown table of every setting: env var, default, meaning. */
export function configTable(): string {
  const rows = Object.values(configSchema as Record<string, Entry>).map(
    (entry) => `| \`${entry.env}\` | \`${shownDefault(entry)}\` | ${entry.doc.replace(/\|/g, '\\|')} |`,
  );
  return ['| env var | default | meaning |', '|---|---|---|', ...rows].join('\n');
}
