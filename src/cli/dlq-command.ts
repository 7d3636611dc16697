import { loadConfig } from '../config/load-config.js';
import { openDeadQueueSession, type DeadQueueSession } from '../dlq/dead-queue-session.js';
import { formatDlqTable } from '../dlq/format-dlq-table.js';
import { listDead } from '../dlq/list-dead.js';
import { purgeDead, purgeFirst } from '../dlq/purge-dead.js';
import { MAX_HELD_BYTES, replayDead } from '../dlq/replay-dead.js';
import { confirmPrompt } from './confirm-prompt.js';
import { DEFAULT_LIST_LIMIT, parseDlqArgs, type DlqCommand } from './parse-dlq-args.js';
import { parseOrReport } from './usage-error.js';

export const DLQ_USAGE = `callback-relay dlq <command>

  list [--limit N] [--json]
      show the first N messages of P.dead (default ${DEFAULT_LIST_LIMIT}) without removing them:
      id, url, reason, attempts, last status, age, last error; --json prints one JSON array
  replay (--id ID... | --reason REASON | --all) [--limit N]
      republish the selected messages to exchange P as fresh callbacks (attempts start again at 1,
      same id), each removed from P.dead only once the broker confirmed its copy; the others stay.
      --id is repeatable; --limit looks at only the first N messages (default: all)
  purge [--yes]
      delete the messages in P.dead; asks first, showing how many, and then deletes only those (the
      oldest), not what was parked meanwhile; --yes deletes all at once without asking (needed
      without a terminal)

P = TOPOLOGY_PREFIX. Connects with AMQP_URL. Exit status: 0 done, 1 failed or not everything
found or purge declined, 2 bad flags or settings.`;

/**
 * Runs `callback-relay dlq …` and returns the exit status. Bad flags are reported here (status 2);
 * configuration and broker errors are thrown for the CLI's common handler (CR_ERR_CONFIG → 2, else 1).
 */
export async function dlqCommand(argv: string[]): Promise<number> {
  const command = parseOrReport('dlq', () => parseDlqArgs(argv));
  if (command === undefined) return 2;
  if (command.action === 'help') {
    process.stdout.write(`${DLQ_USAGE}\n`);
    return 0;
  }
  // Refuse before connecting: without a terminal nobody can answer the question.
  if (command.action === 'purge' && !command.yes && process.stdin.isTTY !== true) {
    process.stderr.write(
      'callback-relay dlq purge: stdin is not a terminal, so it cannot ask for confirmation; pass --yes to purge. Nothing was purged.\n',
    );
    return 2;
  }
  const session = await openDeadQueueSession(loadConfig());
  try {
    return await run(command, session);
  } finally {
    await session.close();
  }
}

async function run(command: Exclude<DlqCommand, { action: 'help' }>, session: DeadQueueSession): Promise<number> {
  const queue = session.names.deadQueue;
  if (command.action === 'list') {
    const listing = await listDead(session, command.limit);
    process.stdout.write(`${command.json ? JSON.stringify(listing.entries) : formatDlqTable(listing.entries, listing.total, queue)}\n`);
    if (listing.refreshed > 0) {
      process.stderr.write(
        `note: ${listing.refreshed} message(s) with a high broker delivery count were put back as fresh copies at the tail of ${queue}\n`,
      );
    }
    return 0;
  }
  if (command.action === 'replay') {
    const result = await replayDead(session, command.selector, command.limit);
    process.stdout.write(`replayed ${result.replayed}, kept ${result.kept}\n`);
    if (result.movedToTail > 0) {
      process.stderr.write(
        `note: ${result.movedToTail} kept message(s) were moved to the tail of ${queue} rather than held in memory (over ${MAX_HELD_BYTES / 1024 / 1024} MiB)\n`,
      );
    }
    if (result.notFound.length > 0) {
      process.stderr.write(`not found among the ${result.examined} message(s) looked at in ${queue}: ${result.notFound.join(', ')}\n`);
      return 1;
    }
    return 0;
  }
  let purged: number;
  if (command.yes) {
    purged = await purgeDead(session);
  } else {
    if (session.messageCount === 0) {
      process.stdout.write(`${queue} is empty\n`);
      return 0;
    }
    if (!(await confirmPrompt(`Purge the ${session.messageCount} oldest messages from ${queue}? [y/N] `))) {
      process.stdout.write('not purged\n');
      return 1;
    }
    // Only what the question showed: callbacks parked while it was open stay.
    purged = await purgeFirst(session, session.messageCount);
  }
  process.stdout.write(`purged ${purged} ${purged === 1 ? 'message' : 'messages'} from ${queue}\n`);
  return 0;
}
