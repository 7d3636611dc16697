import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import { describe, expect, it } from 'vitest';
import { BrokerEffects, returnRoute } from '../../../src/consumer/effects.js';
import { createLogger } from '../../../src/logger.js';
import type { AttemptReport, PipelineObserver } from '../../../src/reports.js';
import { topologyNames } from '../../../src/topology/topology-names.js';

// The effects' own part: what they report and when, and the channels they leave alone. Copies,
// confirms and their failures are settle's (test/unit/settle, test/scenarios/settle-failures).

const names = topologyNames('effects');
const message = { content: Buffer.from('{}'), fields: {}, properties: { headers: {} } } as unknown as ConsumeMessage;

/** A channel that records its acks and nacks; `throws`: one that closed meanwhile. */
function channelRecording(throws = false) {
  const settled: string[] = [];
  const channel = {
    ack: () => settled.push('ack'),
    nack: (_m: unknown, _all: boolean, requeue: boolean) => {
      if (throws) throw new Error('Channel closed');
      settled.push(requeue ? 'requeue' : 'reject');
    },
  } as unknown as ConfirmChannel;
  return { channel, settled };
}

function effects(closed = new WeakSet<ConfirmChannel>()) {
  const reports: AttemptReport[] = [];
  const observer = { reported: (report: AttemptReport) => reports.push(report) } as unknown as PipelineObserver;
  const made = new BrokerEffects({
    names,
    mode: 'queues',
    logger: createLogger('silent'),
    observer,
    settle: {},
    stopping: new AbortController().signal,
    isClosed: (channel) => closed.has(channel),
  });
  return { made, reports };
}

const report: AttemptReport = {
  kind: 'canceled',
  id: 'cb-1',
  url: 'https://example.com/',
  target: 'https://example.com',
  lane: '0',
  attempt: 0,
};
const record = { id: 'cb-1', attempts: 1, firstAttemptAt: undefined, lastAttemptAt: undefined, lastStatus: 200, lastError: undefined };

describe('BrokerEffects', () => {
  it('reports a settlement once it is carried out', async () => {
    const { channel, settled } = channelRecording();
    const { made, reports } = effects();
    expect(await made.settle({ message, channel, lane: '0', bucket: 0 }, { kind: 'ack' }, record, report)).toBe(true);
    expect(settled).toEqual(['ack']);
    expect(reports).toEqual([report]);
  });

  it('gives a message back with a requeue, but not on a channel that closed, and never throws', () => {
    const closed = new WeakSet<ConfirmChannel>();
    const { made } = effects(closed);
    const open = channelRecording();
    made.giveBack({ message, channel: open.channel, lane: '0' });
    expect(open.settled).toEqual(['requeue']);
    const gone = channelRecording();
    closed.add(gone.channel);
    made.giveBack({ message, channel: gone.channel, lane: '0' });
    expect(gone.settled).toEqual([]);
    expect(() => made.giveBack({ message, channel: channelRecording(true).channel, lane: '0' })).not.toThrow();
  });

  it("routes a message back to its own lane's queue, or P.slow's", () => {
    expect(returnRoute(names, '0')).toEqual({ queue: names.workQueues[0], deadQueue: names.deadQueue });
    expect(returnRoute(names, 'slow')).toEqual({ queue: names.slowQueue, deadQueue: names.deadQueue });
  });
});
