import { isNotFound } from '../amqp/broker-errors.js';
import { connectFirst, openChannel } from '../amqp/connect.js';
import type { OutcomeEvent } from '../events/outcome-events.js';
import { readHistory, type HistoryStart } from '../history/read-history.js';

/** The ranges the Callback page reads P.history over. */
export const LOOKUP_RANGES: Record<string, number | 'all'> = { '1h': 3_600_000, '24h': 86_400_000, all: 'all' };

/**
 * The events of callback `id` in P.history over `range`, oldest first, read as `callback-relay history`
 * reads them (the read stops at the end of the stream). `undefined` when P.history does not exist.
 * Only matching events are kept: a scan of the whole stream holds no more than the one timeline.
 */
export async function lookUpCallback(
  urls: string[],
  queue: string,
  id: string,
  range: string,
  now: number,
): Promise<OutcomeEvent[] | undefined> {
  const span = LOOKUP_RANGES[range] ?? LOOKUP_RANGES['24h'];
  const from: HistoryStart = span === 'all' || span === undefined ? 'first' : new Date(now - span);
  const { connection } = await connectFirst(urls);
  try {
    const probe = await openChannel(connection);
    try {
      await probe.checkQueue(queue);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
    const events: OutcomeEvent[] = [];
    await readHistory(await openChannel(connection), queue, {
      from,
      follow: false,
      match: (event) => event.id === id,
      onEvent: (event) => events.push(event),
    });
    return events;
  } finally {
    await connection.close().catch(() => {});
  }
}
