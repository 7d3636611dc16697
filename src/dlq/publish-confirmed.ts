import type { ConfirmChannel, Options } from 'amqplib';
import { withTimeout } from '../util/with-timeout.js';

/**
 * Publishes and resolves once the broker has confirmed the message; rejects on a negative confirm,
 * a closed channel, or no confirm within `timeoutMs`. Callers ack the original only after this
 * resolves, so an interruption can duplicate a callback but never lose one.
 */
export function publishConfirmed(
  channel: ConfirmChannel,
  target: { exchange: string; routingKey: string },
  content: Buffer,
  options: Options.Publish,
  timeoutMs: number,
): Promise<void> {
  const confirmed = new Promise<void>((resolve, reject) => {
    try {
      channel.publish(target.exchange, target.routingKey, content, options, (error) =>
        error ? reject(new Error(`the broker refused the copy for "${target.exchange || target.routingKey}"`, { cause: error })) : resolve(),
      );
    } catch (error) {
      reject(error as Error);
    }
  });
  return withTimeout(confirmed, timeoutMs, () => new Error(`no confirm from the broker within ${timeoutMs} ms (PUBLISH_TIMEOUT)`));
}
