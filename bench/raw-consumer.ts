/**
 * Ceiling (a) of the throughput scenario: consume and ack, no HTTP. Prints `result {json}` once
 * EXPECT messages have arrived: first and last arrival time, and the publish → consumed latency summary.
 * Run (transpiled, see bench-build.ts) with AMQP_URL, QUEUE, PREFETCH and EXPECT.
 */
import amqplib from 'amqplib';
import { summarize } from './stats.js';

const expect = Number(process.env.EXPECT ?? '0');
const connection = await amqplib.connect(process.env.AMQP_URL ?? 'amqp://127.0.0.1');
const channel = await connection.createChannel();
await channel.prefetch(Number(process.env.PREFETCH ?? '100'));
const latencies: number[] = [];
let firstAt = 0;
await channel.consume(process.env.QUEUE ?? '', (message) => {
  if (message === null) return;
  const now = Date.now();
  const { body } = JSON.parse(message.content.toString('utf8')) as { body: { sentAt: number } };
  channel.ack(message);
  if (firstAt === 0) firstAt = now;
  latencies.push(now - body.sentAt);
  if (latencies.length === expect)
    process.stdout.write(`result ${JSON.stringify({ firstAt, lastAt: now, latency: summarize(latencies) })}\n`);
});
process.stdout.write('consuming\n');

process.once('SIGTERM', () => {
  connection.close().finally(() => process.exit(0));
});
