/**
 * Ceiling (b) of the throughput scenario: the least a relay has to do, and nothing else —
 * amqplib consume → undici POST → ack. No validation, retries, isolation, metrics, events or logs.
 * Run (transpiled, see bench-build.ts) with AMQP_URL, QUEUES (comma-separated: every work lane) and
 * PREFETCH (per queue, like the relay's).
 */
import amqplib from 'amqplib';
import { Agent, request } from 'undici';

const amqpUrl = process.env.AMQP_URL ?? 'amqp://127.0.0.1';
const queues = (process.env.QUEUES ?? '').split(',');
const prefetch = Number(process.env.PREFETCH ?? '100');
const dispatcher = new Agent({ keepAliveTimeout: 4_000 });

const connection = await amqplib.connect(amqpUrl);
const channel = await connection.createChannel();
await channel.prefetch(prefetch);
const onMessage = (message: amqplib.ConsumeMessage | null): void => {
  if (message === null) return;
  const { url, body } = JSON.parse(message.content.toString('utf8')) as { url: string; body: unknown };
  request(url, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' }, dispatcher })
    .then((response) => response.body.dump())
    .then(
      () => channel.ack(message),
      () => channel.nack(message),
    );
};
for (const queue of queues) await channel.consume(queue, onMessage);
process.stdout.write('consuming\n');

process.once('SIGTERM', () => {
  connection.close().finally(() => process.exit(0));
});
