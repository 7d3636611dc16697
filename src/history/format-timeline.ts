import type { OutcomeEvent } from '../events/outcome-events.js';
import { maskUrl } from '../formats/mask-url.js';
import { printable } from '../formats/printable.js';

/**
 * One line of a callback's timeline: when, which attempt, what happened (status or error), how long
 * it took, which worker, and when the next attempt is due. `withId` adds the callback's id and URL
 * (for `--follow`, where lines of many callbacks interleave). Every part is made printable, as in
 * `dlq list`: the URL and the error text come from outside and must not reach the terminal raw.
 */
export function formatTimelineLine(event: OutcomeEvent, withId = false): string {
  const result = event.status !== undefined ? `HTTP ${event.status}` : '';
  const error = event.error !== undefined && event.error !== result ? event.error : '';
  const parts = [
    event.at,
    // Masked again: events stored before URLs were masked may still hold a credential.
    ...(withId ? [event.id, maskUrl(event.url)] : []),
    `attempt ${event.attempt}`,
    event.type + (event.reason !== undefined ? ` (${event.reason})` : ''),
    [result, error].filter(Boolean).join(' ') || '-',
    event.durationMs !== undefined ? `${Math.round(event.durationMs)}ms` : '-',
    event.worker ?? '-',
    event.nextAttemptAt !== undefined ? `next ${event.nextAttemptAt}` : '',
  ];
  return parts
    .filter((part) => part !== '')
    .map(printable)
    .join('  ');
}
