/**
 * Ceiling (b) of the throughput scenario: the least a relay has to do, and nothing else —
 * amqplib consume → undici POST → ack. No validation, retries, isolation, metrics, events or logs.
 * Run (transpiled, see bench-build.ts) with AMQP_URL, QUEUE and PREFETCH.
 */
import amqplib from 'amqplib';
import { Agent, request } from 'undici';

const amqpUrl = process.env.AMQP_URL ?? 'amqp://127.0.0.1';
const queue = process.env.QUEUE ?? '';
const prefetch = Number(process.env.PREFETCH ?? '100');
const dispatcher = new Agent({ keepAliveTimeout: 4_000 });

const connection = await amqplib.connect(amqpUrl);
const channel = await connection.createChannel();
await channel.prefetch(prefetch);
await channel.consume(queue, (message) => {
  if (message === null) return;
  const { url, body } = JSON.parse(message.content.toString('utf8')) as { url: string; body: unknown };
  request(url, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' }, dispatcher })
    .then((response) => response.body.dump())
    .then(
      () => channel.ack(message),
      () => channel.nack(message),
    );
});
process.stdout.write('consuming\n');

process.once('SIGTERM', () => {
  connection.close().finally(() => process.exit(0));
});
