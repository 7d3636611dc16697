import type { OutcomeEvent } from '../events/outcome-events.js';

/** Where a callback is now, as its last event says. */
export interface WhereNow {
  text: string;
  /** Whether it may still be attempted, so a cancel marker would stop it. */
  pending: boolean;
}

/**
 * Where a callback is after `events` (its timeline, oldest first), for the Callback page. Pure: the
 * clock is injected. No event: it was never attempted in the range read (still waiting for its first
 * attempt, or older than the range), so it may be pending.
 */
export function whereNow(events: readonly OutcomeEvent[], cancelled: boolean, now: number): WhereNow {
  const last = events[events.length - 1];
  if (last === undefined) {
    return {
      text: cancelled
        ? 'no events in the range read; a cancel marker was written for it'
        : 'no events in the range read: not attempted yet, or older than the range',
      pending: !cancelled,
    };
  }
  switch (last.type) {
    case 'delivered':
      return { text: `delivered at ${last.at} (attempt ${last.attempt})`, pending: false };
    case 'dead':
      return { text: `parked in the dead-letter queue: ${last.reason ?? 'dead'}`, pending: false };
    case 'canceled':
      return { text: 'canceled: parked in the dead-letter queue', pending: false };
    case 'paused':
      return { text: 'held: its target is paused; it is attempted once the target is resumed', pending: !cancelled };
    case 'retry-scheduled': {
      const due = last.nextAttemptAt === undefined ? Number.NaN : Date.parse(last.nextAttemptAt);
      const when = Number.isNaN(due)
        ? ''
        : due > now
          ? ` at ${last.nextAttemptAt} (in ${Math.ceil((due - now) / 1000)} s)`
          : ` (due since ${last.nextAttemptAt})`;
      return {
        text: `waiting for attempt ${last.attempt + 1}${when}${cancelled ? '; a cancel marker was written for it' : ''}`,
        pending: !cancelled,
      };
    }
  }
}
