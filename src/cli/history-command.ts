import { loadConfig } from '../config/load-config.js';
import { isNotFound } from '../amqp/broker-errors.js';
import { connectFirst, openChannel } from '../amqp/connect.js';
import { amqpUrls } from '../config/amqp-urls.js';
import { RelayError } from '../errors.js';
import type { OutcomeEvent } from '../events/outcome-events.js';
import { formatTimelineLine } from '../history/format-timeline.js';
import { readHistory, type HistoryStart } from '../history/read-history.js';
import { topologyNames } from '../topology/topology-names.js';
import { parseHistoryArgs } from './parse-history-args.js';
import { parseOrReport } from './usage-error.js';

export const HISTORY_USAGE = `callback-relay history <command>

  history <id> [--since 1h] [--json]
      print the callback's timeline from the stream P.history: each attempt's time, outcome
      (status or error), duration, worker and next attempt. --since reads only the last hour
      (or 30m, 48h…) instead of the whole stream; --json prints one JSON array of the events
  history --follow [--target ORIGIN] [--since 1h] [--json]
      print events as they happen (from --since ago, else from now) until interrupted;
      --target keeps those of one origin (https://partner.example); --json prints one per line

Needs HISTORY=on (the workers declare P.history). P = TOPOLOGY_PREFIX. Connects with AMQP_URL.
Exit status: 0 done (1 for a lookup that found nothing), 2 bad flags or settings.`;

/** Runs `callback-relay history …` and returns the exit status (see HISTORY_USAGE). */
export async function historyCommand(argv: string[], signal?: AbortSignal): Promise<number> {
  const command = parseOrReport('history', () => parseHistoryArgs(argv));
  if (command === undefined) return 2;
  if (command.action === 'help') {
    process.stdout.write(`${HISTORY_USAGE}\n`);
    return 0;
  }
  const config = loadConfig();
  const queue = topologyNames(config.topologyPrefix).historyQueue;
  const { connection } = await connectFirst(amqpUrls(config.amqpUrl));
  try {
    const channel = await openChannel(connection);
    await channel.checkQueue(queue).catch((error: unknown) => {
      if (!isNotFound(error)) throw error;
      throw new RelayError(
        'CR_ERR_CONFIG',
        `HISTORY: the stream "${queue}" does not exist (value of TOPOLOGY_PREFIX was "${config.topologyPrefix}"; workers declare it with HISTORY=on)`,
        { cause: error },
      );
    });
    const reader = await openChannel(connection);
    const since = command.sinceMs === undefined ? undefined : new Date(Date.now() - command.sinceMs);
    if (command.action === 'follow') {
      const origin = command.target;
      const print = (event: OutcomeEvent): void =>
        void process.stdout.write(`${command.json ? JSON.stringify(event) : formatTimelineLine(event, true)}\n`);
      const match = (event: OutcomeEvent): boolean => origin === undefined || originOf(event.url) === origin;
      // Said once the broker reads for us: a follow from now misses whatever was stored before it.
      const onReading = (): void =>
        void process.stderr.write(`following ${queue} from ${since ? since.toISOString() : 'now'} until interrupted\n`);
      await readHistory(reader, queue, {
        from: since ?? 'next',
        follow: true,
        match,
        onEvent: print,
        onReading,
        ...(signal && { signal }),
      });
      return 0;
    }
    const events: OutcomeEvent[] = [];
    const from: HistoryStart = since ?? 'first';
    await readHistory(reader, queue, {
      from,
      follow: false,
      match: (event) => event.id === command.id,
      onEvent: (event) => events.push(event),
    });
    if (command.json) process.stdout.write(`${JSON.stringify(events)}\n`);
    else if (events.length === 0)
      process.stderr.write(
        `no events of callback ${JSON.stringify(command.id)} in ${queue}${since ? ` since ${since.toISOString()}` : ''}\n`,
      );
    else for (const event of events) process.stdout.write(`${formatTimelineLine(event)}\n`);
    return events.length === 0 ? 1 : 0;
  } finally {
    await connection.close().catch(() => {});
  }
}

function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}
