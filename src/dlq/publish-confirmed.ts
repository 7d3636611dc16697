import type { ConfirmChannel, Message, Options } from 'amqplib';
import { withTimeout } from '../util/with-timeout.js';

/**
 * Publishes and resolves once the broker has confirmed the message; rejects on a negative confirm,
 * a closed channel, no confirm within `timeoutMs`, or, for a `mandatory` publish, a basic.return.
 * Callers ack the original only after this resolves, so an interruption can duplicate a callback
 * but never lose one.
 *
 * An unroutable message is confirmed too: the broker drops it and acks. With `mandatory` it first
 * sends basic.return, before the ack on the same channel
 * (https://www.rabbitmq.com/docs/confirms#when-publishes-are-confirmed), so the return is known when
 * the confirm arrives. A return is matched to this publish by exchange, routing key and message id;
 * callers publish one message at a time on the channel.
 */
export function publishConfirmed(
  channel: ConfirmChannel,
  target: { exchange: string; routingKey: string },
  content: Buffer,
  options: Options.Publish,
  timeoutMs: number,
): Promise<void> {
  let returned = false;
  const onReturn = (message: Message): void => {
    const { exchange, routingKey } = message.fields as { exchange?: string; routingKey?: string };
    if (exchange === target.exchange && routingKey === target.routingKey && message.properties.messageId === options.messageId) returned = true;
  };
  if (options.mandatory === true) channel.on('return', onReturn);
  const where = `"${target.exchange || target.routingKey}"`;
  const confirmed = new Promise<void>((resolve, reject) => {
    try {
      channel.publish(target.exchange, target.routingKey, content, options, (error) => {
        if (error) reject(new Error(`the broker refused the copy for ${where}`, { cause: error }));
        else if (returned) reject(new Error(`the broker returned the copy as unroutable: nothing is bound to ${where} with routing key "${target.routingKey}"`));
        else resolve();
      });
    } catch (error) {
      reject(error as Error);
    }
  });
  return withTimeout(confirmed, timeoutMs, () => new Error(`no confirm from the broker within ${timeoutMs} ms (PUBLISH_TIMEOUT)`)).finally(() =>
    channel.off('return', onReturn),
  );
}
