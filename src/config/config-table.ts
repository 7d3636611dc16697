import { formatDuration } from './duration.js';
import { configSchema } from './schema.js';

type Entry = { doc: string; format: unknown; default: unknown; env: string };

function shownDefault(entry: Entry): string {
  const { format, default: value } = entry;
  if (value === null) return 'schedule length + 1';
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
