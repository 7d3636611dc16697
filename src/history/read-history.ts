import type { Channel, ConsumeMessage } from 'amqplib';
import type { OutcomeEvent } from '../events/outcome-events.js';
import { maskUrl } from '../formats/mask-url.js';

/** Where a read starts: the stream's first event, its next one (what arrives from now on), or a time. */
export type HistoryStart = 'first' | 'next' | Date;

export interface HistoryRead {
  from: HistoryStart;
  /** Events kept; the others are read and skipped. */
  match: (event: OutcomeEvent) => boolean;
  onEvent: (event: OutcomeEvent) => void;
  /** Keep reading new events until `signal` aborts; otherwise stop at the end of the stream. */
  follow: boolean;
  signal?: AbortSignal;
  /**
   * Called once the broker has confirmed the consumer (`basic.consume-ok`). A `next` read sees only
   * events stored after this point, so a caller that must not miss one waits for it.
   */
  onReading?: () => void;
}

/** Events a reader may hold unacked: a stream consumer must set a prefetch, and it paces the broker. */
const PREFETCH = 1_000;
/** Acks are sent for this many events at a time (one `multiple` ack), not one per event. */
const ACK_EVERY = 200;
/** A read that is not following ends when the stream has sent nothing for this long. */
const QUIET_MS = 1_000;
/**
 * ...or at an event stamped this long after the read began: the stream has reached the present
 * (RabbitMQ 3.10 reports no length for a stream; the margin absorbs clocks of workers running ahead).
 */
const PRESENT_MARGIN_MS = 5_000;

/**
 * Reads P.history from `from`, handing each matching event to `onEvent` once (an event stored twice,
 * by a callback attempted again after a crash, has the same message id). A stream is read by a
 * consumer with a prefetch, manual acks and `x-stream-offset`; nothing is removed by reading:
 * https://www.rabbitmq.com/docs/streams#consuming
 *
 * Without `follow` the read stops at the end of the stream: after a quiet second, or at an event
 * written after the read began. Resolves with the number of events scanned.
 */
export async function readHistory(channel: Channel, queue: string, read: HistoryRead, clock: () => number = Date.now): Promise<number> {
  const present = clock() + PRESENT_MARGIN_MS;
  await channel.prefetch(PREFETCH);
  const seen = new Set<string>();
  let scanned = 0;
  return new Promise<number>((resolve, reject) => {
    let tag: string | undefined;
    let quiet: NodeJS.Timeout | undefined;
    /** The newest event not acked yet. */
    let last: ConsumeMessage | undefined;
    let done = false;
    const finish = (error?: Error): void => {
      if (done) return;
      done = true;
      clearTimeout(quiet);
      read.signal?.removeEventListener('abort', onAbort);
      if (last) channel.ack(last, true);
      const cancelled = tag === undefined ? Promise.resolve() : channel.cancel(tag).then(() => undefined);
      void cancelled.catch(() => {}).then(() => (error ? reject(error) : resolve(scanned)));
    };
    const onAbort = (): void => finish();
    const rearm = (): void => {
      if (read.follow) return;
      clearTimeout(quiet);
      quiet = setTimeout(() => finish(), QUIET_MS);
    };
    read.signal?.addEventListener('abort', onAbort);
    const onMessage = (message: ConsumeMessage | null): void => {
      if (done) return;
      if (message === null) return finish(new Error(`the broker cancelled the read of ${queue}`));
      scanned += 1;
      last = message;
      if (scanned % ACK_EVERY === 0) {
        channel.ack(message, true);
        last = undefined;
      }
      const id = message.properties.messageId as string | undefined;
      const event = parse(message);
      if (event && !read.follow && Date.parse(event.at) > present) return finish();
      // Only matching ids are remembered: a scan of millions of events holds no set of them all.
      if (event && read.match(event) && (id === undefined || !seen.has(id))) {
        if (id !== undefined) seen.add(id);
        read.onEvent(event);
      }
      rearm();
    };
    channel
      .consume(queue, onMessage, { noAck: false, arguments: { 'x-stream-offset': streamOffset(read.from) } })
      .then(({ consumerTag }) => {
        tag = consumerTag;
        if (read.signal?.aborted) return finish();
        read.onReading?.();
        rearm();
      }, reject);
  });
}

/** `x-stream-offset` as the broker takes it: `first`, `next`, or an AMQP timestamp (seconds). */
function streamOffset(from: HistoryStart): unknown {
  if (from instanceof Date) return { '!': 'timestamp', value: Math.floor(from.getTime() / 1000) };
  return from;
}

function parse(message: ConsumeMessage): OutcomeEvent | undefined {
  try {
    const event = JSON.parse(message.content.toString('utf8')) as OutcomeEvent;
    if (typeof event !== 'object' || event === null || typeof event.id !== 'string') return undefined;
    // Events stored before URLs were masked at the source may still hold a credential: masked on the way out.
    return typeof event.url === 'string' ? { ...event, url: maskUrl(event.url) } : event;
  } catch {
    return undefined;
  }
}
