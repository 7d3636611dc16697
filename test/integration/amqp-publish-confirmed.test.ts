import amqplib, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { publishConfirmed } from '../../src/amqp/publish-confirmed.js';
import { HEADER } from '../../src/message/headers.js';
import { randomPrefix } from '../support/relay.js';

// The one confirmed publish every AMQP user of the relay shares, against the real broker.
describe('publishConfirmed', () => {
  let connection: ChannelModel;
  let channel: ConfirmChannel;
  let queue: string;
  const body = Buffer.from('{}');

  beforeEach(async () => {
    connection = await amqplib.connect(inject('amqpUrl'));
    channel = await connection.createConfirmChannel();
    channel.on('error', () => {});
    queue = `${randomPrefix()}.q`;
  });

  afterEach(async () => {
    const cleanup = await connection.createChannel().catch(() => undefined);
    await cleanup?.deleteQueue(queue);
    await connection.close().catch(() => {});
  });

  it('resolves once the broker stored the message', async () => {
    await channel.assertQueue(queue, { durable: true });
    await publishConfirmed(
      channel,
      { exchange: '', routingKey: queue },
      body,
      { persistent: true, mandatory: true, messageId: 'a' },
      5_000,
    );
    expect((await channel.checkQueue(queue)).messageCount).toBe(1);
  });

  it('CR_ERR_PUBLISH_RETURNED: a mandatory message no queue takes, matched to its own publish among others', async () => {
    await channel.assertQueue(queue, { durable: true });
    const target = (routingKey: string) => ({ exchange: '', routingKey });
    // Same id, and the same stale return token from an earlier copy: neither may match the return.
    const options = { mandatory: true, messageId: 'same', headers: { [HEADER.copy]: 'stale.1' } };
    const [stored, returned] = await Promise.allSettled([
      publishConfirmed(channel, target(queue), body, options, 5_000),
      publishConfirmed(channel, target(`${queue}.missing`), body, options, 5_000),
    ]);
    expect(stored.status).toBe('fulfilled');
    expect(returned).toMatchObject({ status: 'rejected', reason: { code: 'CR_ERR_PUBLISH_RETURNED' } });
  });

  it('without mandatory, an unroutable message is dropped and still confirmed', async () => {
    await expect(publishConfirmed(channel, { exchange: '', routingKey: `${queue}.missing` }, body, {}, 5_000)).resolves.toBeUndefined();
  });

  it('CR_ERR_PUBLISH_NACKED: a queue at its max-length with reject-publish refuses the message', async () => {
    await channel.assertQueue(queue, { durable: true, arguments: { 'x-max-length': 0, 'x-overflow': 'reject-publish' } });
    await expect(publishConfirmed(channel, { exchange: '', routingKey: queue }, body, {}, 5_000)).rejects.toMatchObject({
      code: 'CR_ERR_PUBLISH_NACKED',
    });
  });

  it('CR_ERR_CLOSED: the channel closes before the confirm', async () => {
    // Publishing to an exchange that does not exist closes the channel (404) instead of confirming.
    await expect(
      publishConfirmed(channel, { exchange: `${queue}.no-such-exchange`, routingKey: 'k' }, body, {}, 5_000),
    ).rejects.toMatchObject({ code: 'CR_ERR_CLOSED' });
  });

  it('CR_ERR_CLOSED: the client refuses a publish on a channel closed before any publish was watched', async () => {
    await channel.close();
    await expect(publishConfirmed(channel, { exchange: '', routingKey: queue }, body, {}, 5_000)).rejects.toMatchObject({
      code: 'CR_ERR_CLOSED',
    });
  });
});
