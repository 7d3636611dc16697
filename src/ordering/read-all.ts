import { RelayError } from '../errors.js';
import type { LogEntry } from './log-entry.js';
import type { OrderLog } from './order-log.js';

/** A log is taken as read to its end once no record arrived for this long after the last one (or the start). */
export const READ_ALL_QUIET_MS = 300;
/** How long a whole read may take: a log written faster than it falls quiet is never read to its end. */
export const READ_ALL_TIMEOUT_MS = 10_000;

export interface ReadAllOptions {
  /** Default READ_ALL_QUIET_MS. */
  quietMs?: number;
  /** Default READ_ALL_TIMEOUT_MS. */
  timeoutMs?: number;
}

/**
 * Reads `log` from its first record to its end as it is now, passing each entry to `onEntry` in
 * offset order, and resolves with how many it passed. A stream has no end marker, and over AMQP 0.9.1
 * a stream's message count is always 0, so the end is where no record arrived for `quietMs` (an
 * empty log ends `quietMs` after the follow started). Only reads: it never appends, so a reader
 * does not fence the shard's owner as a claim would. Rejects with `CR_ERR_LOG_READ_TIMEOUT` when the
 * log did not fall quiet within `timeoutMs`, with `CR_ERR_LOG_MISSING` or `CR_ERR_CLOSED` as
 * `follow` does, or with what `onEntry` threw; the follow is stopped in every case.
 */
export async function readAll(
  log: Pick<OrderLog, 'follow'>,
  onEntry: (entry: LogEntry) => void,
  options: ReadAllOptions = {},
): Promise<number> {
  const { quietMs = READ_ALL_QUIET_MS, timeoutMs = READ_ALL_TIMEOUT_MS } = options;
  let count = 0;
  let done = false;
  let finish: (error?: unknown) => void = () => {};
  const ended = new Promise<void>((resolve, reject) => {
    finish = (error) => {
      done = true;
      if (error === undefined) resolve();
      else reject(error);
    };
  });
  // It may settle before it is awaited (the follow failed or did not start in time): no unhandled rejection.
  ended.catch(() => {});
  let quiet: NodeJS.Timeout | undefined;
  const restartQuiet = (): void => {
    clearTimeout(quiet);
    quiet = setTimeout(() => finish(), quietMs);
  };
  const deadline = setTimeout(
    () =>
      finish(
        new RelayError(
          'CR_ERR_LOG_READ_TIMEOUT',
          `the log was not read to its end within ${timeoutMs} ms: records kept arriving, or the broker did not deliver them`,
        ),
      ),
    timeoutMs,
  );
  const following = log.follow(
    'first',
    (entry) => {
      if (done) return;
      count += 1;
      try {
        onEntry(entry);
      } catch (error) {
        return finish(error);
      }
      restartQuiet();
    },
    (error) => finish(error ?? new Error('the follow of the log ended')),
  );
  let stop: (() => Promise<void>) | undefined;
  try {
    // A follow that does not even start before the deadline ends the read as well.
    stop = await Promise.race([following, ended.then(() => undefined)]);
    if (!done) restartQuiet();
    await ended;
    return count;
  } finally {
    done = true;
    clearTimeout(quiet);
    clearTimeout(deadline);
    if (stop) await stop().catch(() => {});
    // Started after the read gave up: stopped as soon as it has.
    else
      void following
        .then(
          (late) => late(),
          () => {},
        )
        .catch(() => {});
  }
}
