import { EventEmitter } from 'node:events';
import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import { describe, expect, it, vi } from 'vitest';
import { settle, type HoldContext, type SettleContext, type SettleFallback } from '../../../src/settle/settle.js';
import { createDurableEvents } from '../../../src/events/durable-events.js';
import { isRelayError } from '../../../src/errors.js';
import { topologyNames } from '../../../src/topology/topology-names.js';
import type { Decision } from '../../../src/policy/decide.js';

// The broker cannot be made to withhold a confirm, and amqplib cannot send a table over 64 KiB: these
// paths are driven by a stand-in channel. Returns and nacks are proven against a real broker in
// test/scenarios/settle-failures.test.ts.

type Confirm = 'ack' | 'nack' | 'never' | 'late' | 'return-then-ack' | 'throw';

class StandInChannel extends EventEmitter {
  published: Array<{ exchange: string; routingKey: string; mandatory: boolean | undefined }> = [];
  headers: Array<Record<string, unknown>> = [];
  settled: string[] = [];
  /** Publishes (by exchange) and settles, in order. */
  log: string[] = [];
  bodies: unknown[] = [];
  /** Callbacks of publishes never confirmed: failed when the channel closes, as amqplib does. */
  pending: Array<(error: Error | null) => void> = [];
  failPending(): void {
    for (const cb of this.pending.splice(0)) cb(new Error('channel closed'));
  }
  constructor(private readonly confirms: Confirm[]) {
    super();
  }
  closed = false;
  publish(
    exchange: string,
    routingKey: string,
    content: Buffer,
    options: { mandatory?: boolean; headers: Record<string, unknown> },
    cb: (error: Error | null) => void,
  ): boolean {
    if (this.closed) throw new Error('Channel closed');
    this.published.push({ exchange, routingKey, mandatory: options.mandatory });
    this.headers.push(options.headers);
    this.log.push(`publish ${exchange}`);
    this.bodies.push(JSON.parse(content.toString()));
    const confirm = this.confirms.shift() ?? 'ack';
    if (confirm === 'throw') throw new TypeError('cannot encode');
    if (confirm === 'never') {
      this.pending.push(cb);
      return true;
    }
    const answer = (fn: () => void): unknown => (confirm === 'late' ? setTimeout(fn, 200) : setImmediate(fn));
    answer(() => {
      if (confirm === 'return-then-ack')
        this.emit('return', { content, fields: { exchange, routingKey }, properties: { headers: options.headers } });
      cb(confirm === 'nack' ? new Error('message nacked') : null);
    });
    return true;
  }
  ack(): void {
    this.settled.push('ack');
    this.log.push('ack');
  }
  nack(_message: unknown, _allUpTo: boolean, requeue: boolean): void {
    this.settled.push(requeue ? 'requeue' : 'reject');
    this.log.push(requeue ? 'requeue' : 'reject');
  }
}

/** The channel closes: amqplib then refuses to settle on it. */
function closeUnder(channel: StandInChannel): void {
  channel.closed = true;
  channel.emit('close');
  channel.nack = () => {
    throw new Error('Channel closed');
  };
  channel.failPending();
}

const message = (headers: Record<string, unknown> = {}): ConsumeMessage =>
  ({ content: Buffer.from('{}'), fields: {}, properties: { headers, contentType: 'application/json' } }) as unknown as ConsumeMessage;

const record = { id: 'c1', attempts: 1, firstAttemptAt: undefined, lastAttemptAt: undefined, lastStatus: 503, lastError: 'HTTP 503' };

type Options = { headers?: Record<string, unknown>; mode?: 'plugin' | 'queues'; settlement?: Decision; durable?: boolean };

function run(confirms: Confirm[], options: Options = {}) {
  const channel = new StandInChannel(confirms);
  const fallbacks: SettleFallback[] = [];
  let redeclared = 0;
  const lostEvents: Error[] = [];
  const slow: string[] = [];
  const context: SettleContext = {
    onEventLost: (error) => lostEvents.push(error),
    onSlowConfirm: (kind) => slow.push(kind),
    channel: channel as unknown as ConfirmChannel,
    message: message(options.headers),
    names: topologyNames('p'),
    bucket: 3,
    mode: options.mode ?? 'queues',
    confirmTimeoutMs: 50,
    redeclare: async () => void (redeclared += 1),
    onFallback: (fallback) => fallbacks.push(fallback),
  };
  const settlement: Decision = options.settlement ?? { kind: 'retry', delayMs: 5_000, attempt: 2, why: 'HTTP 503' };
  if (options.durable) {
    const report = {
      kind: 'attempt' as const,
      id: 'c1',
      url: 'https://a.example/h',
      target: 'https://a.example',
      lane: '0',
      attempt: 1,
      outcome: { status: 503, durationMs: 12 },
      decision: settlement,
      nextAttemptAt: undefined,
    };
    context.storeEvent = createDurableEvents('p.events', () => 0, 50, 'w/1').forReport(context.channel, report);
  }
  const settled = settle(settlement, record, context);
  return { channel, fallbacks, redeclared: () => redeclared, settled, lostEvents, slow };
}

describe('settle', () => {
  it('acks the original once the copy is confirmed', async () => {
    const { channel, settled, redeclared } = run(['ack']);
    expect(await settled).toBe(true);
    expect(channel.settled).toEqual(['ack']);
    expect(redeclared()).toBe(0);
  });

  it('a returned copy: declares the topology again, publishes once more, then acks', async () => {
    const { channel, settled, redeclared } = run(['return-then-ack', 'ack']);
    expect(await settled).toBe(true);
    expect(redeclared()).toBe(1);
    expect(channel.published).toHaveLength(2);
    expect(channel.settled).toEqual(['ack']);
  });

  it('returned twice: rejects the original without requeue, for the broker to dead-letter', async () => {
    const { channel, settled, fallbacks } = run(['return-then-ack', 'return-then-ack']);
    expect(await settled).toBe(false);
    expect(channel.settled).toEqual(['reject']);
    expect(fallbacks).toMatchObject([{ id: 'c1', kind: 'retry', cause: 'returned' }]);
  });

  it('nacked twice: rejects the original', async () => {
    const { channel, settled, fallbacks } = run(['nack', 'nack']);
    expect(await settled).toBe(false);
    expect(channel.settled).toEqual(['reject']);
    expect(fallbacks.map((f) => f.cause)).toEqual(['nacked']);
  });

  it('a confirm later than the timeout is waited for, never taken as "not stored": the original is acked, never also rejected', async () => {
    const { channel, settled, fallbacks, redeclared, slow } = run(['late']);
    expect(await settled).toBe(true);
    expect(slow).toEqual(['retry']);
    expect(channel.published).toHaveLength(1);
    expect(channel.settled).toEqual(['ack']);
    expect(fallbacks).toEqual([]);
    expect(redeclared()).toBe(0);
  });

  it('no confirm until the channel closes: throws, the original neither acked nor rejected (the broker requeues it)', async () => {
    const { channel, settled, fallbacks, slow } = run(['never']);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(slow).toEqual(['retry']);
    // amqplib fails a closing channel's unconfirmed publishes through their callbacks.
    closeUnder(channel);
    await expect(settled).rejects.toThrow();
    expect(channel.settled).toEqual([]);
    expect(fallbacks).toEqual([]);
  });

  it('headers too large to encode: never calls publish, rejects the original', async () => {
    const { channel, settled, fallbacks } = run([], { headers: { big: 'x'.repeat(65_536) } });
    expect(await settled).toBe(false);
    expect(channel.published).toHaveLength(0);
    expect(channel.settled).toEqual(['reject']);
    expect(fallbacks.map((f) => f.cause)).toEqual(['too-large']);
  });

  it('a publish the client refuses: rejects the original', async () => {
    const { channel, settled, fallbacks } = run(['throw']);
    expect(await settled).toBe(false);
    expect(channel.settled).toEqual(['reject']);
    expect(fallbacks.map((f) => f.cause)).toEqual(['refused']);
  });

  it('a channel that closed: throws, leaving the original to the broker', async () => {
    const { channel, settled } = run(['never']);
    closeUnder(channel);
    await expect(settled).rejects.toThrow();
    expect(channel.settled).toEqual([]);
  });

  it('mandatory on every route but the x-delayed-message exchange', async () => {
    const retry = { kind: 'retry' as const, delayMs: 5_000, attempt: 2, why: '' };
    const route = async (mode: 'plugin' | 'queues', settlement: Decision) => {
      const { channel, settled } = run(['ack'], { mode, settlement });
      await settled;
      return channel.published[0];
    };
    expect(await route('plugin', retry)).toEqual({ exchange: 'p', routingKey: 'due.3', mandatory: false });
    expect(await route('queues', retry)).toMatchObject({ exchange: 'p.delay', mandatory: true });
    expect(await route('plugin', { kind: 'dead', reason: 'rejected', why: '' })).toEqual({
      exchange: '',
      routingKey: 'p.dead',
      mandatory: true,
    });
  });
});

describe('settle: a hold', () => {
  function hold(confirms: Confirm[], headers: Record<string, unknown> = {}, durable = false, stopping?: AbortSignal) {
    const channel = new StandInChannel(confirms);
    const fallbacks: SettleFallback[] = [];
    const confirmed: string[] = [];
    let redeclared = 0;
    const context: HoldContext = {
      channel: channel as unknown as ConfirmChannel,
      message: message(headers),
      confirmTimeoutMs: 50,
      redeclare: async () => void (redeclared += 1),
      onFallback: (fallback) => fallbacks.push(fallback),
      onConfirm: (kind) => confirmed.push(kind),
      stopping,
    };
    if (durable) {
      const report = { kind: 'held' as const, id: 'c1', url: 'https://a.example/h', target: 'https://a.example', lane: '0', attempt: 0 };
      context.storeEvent = createDurableEvents('p.events', () => 0, 50, 'w/1').forReport(context.channel, report);
    }
    const settled = settle(
      { kind: 'hold', queue: 'p.paused', returnTo: { queue: 'p.paused.check', deadQueue: 'p.dead' } },
      { id: 'c1' },
      context,
    );
    return { channel, fallbacks, confirmed, redeclared: () => redeclared, settled };
  }

  it('a confirmed copy in the holding queue, headers and attempt count unchanged but what the broker added, then the ack', async () => {
    const { channel, settled, confirmed } = hold(['ack'], {
      'x-callback-attempt': 3,
      'x-death': [{ queue: 'p.paused' }],
      'x-first-death-queue': 'p.paused',
    });
    expect(await settled).toBe(true);
    expect(channel.published).toEqual([{ exchange: '', routingKey: 'p.paused', mandatory: true }]);
    expect(channel.headers[0]).toMatchObject({ 'x-callback-attempt': 3 });
    expect(Object.keys(channel.headers[0]!).filter((name) => name.startsWith('x-death') || name.startsWith('x-first-death'))).toEqual([]);
    expect(channel.log).toEqual(['publish ', 'ack']);
    // The confirm metric is labelled retry or dead only.
    expect(confirmed).toEqual([]);
  });

  it('returned twice: declared again, then a copy counted back into its own queue a second later, never a requeue', async () => {
    const { channel, settled, fallbacks, redeclared } = hold(['return-then-ack', 'return-then-ack', 'ack'], { 'x-callback-attempt': 2 });
    const started = performance.now();
    expect(await settled).toBe(false);
    expect(performance.now() - started).toBeGreaterThanOrEqual(900);
    expect(redeclared()).toBe(1);
    expect(channel.log).toEqual(['publish ', 'publish ', 'publish ', 'ack']);
    expect(channel.published[2]).toEqual({ exchange: '', routingKey: 'p.paused.check', mandatory: true });
    expect(channel.headers[2]).toMatchObject({ 'x-callback-attempt': 2, 'x-callback-returns': 1 });
    expect(fallbacks).toMatchObject([{ id: 'c1', kind: 'hold', cause: 'returned' }]);
  });

  it('the worker is stopping: a hold that cannot be stored goes back to its queue without the wait, its count raised', async () => {
    // Only timers are stood in for: the stand-in channel confirms on setImmediate. No timer advances,
    // so the copy back is published only because the stop cut the send-back's wait short.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const stop = new AbortController();
      stop.abort();
      const { channel, settled } = hold(['nack', 'nack', 'ack'], { 'x-callback-attempt': 2 }, false, stop.signal);
      expect(await settled).toBe(false);
      expect(channel.log).toEqual(['publish ', 'publish ', 'publish ', 'ack']);
      expect(channel.published[2]).toEqual({ exchange: '', routingKey: 'p.paused.check', mandatory: true });
      expect(channel.headers[2]).toMatchObject({ 'x-callback-attempt': 2, 'x-callback-returns': 1 });
    } finally {
      vi.useRealTimers();
    }
  });

  it('sent back MAX_RETURNS times already: parked in P.dead as unsettled, at once', async () => {
    const { channel, settled } = hold(['nack', 'nack', 'ack'], { 'x-callback-attempt': 3, 'x-callback-returns': 5 });
    expect(await settled).toBe(false);
    expect(channel.log).toEqual(['publish ', 'publish ', 'publish ', 'ack']);
    expect(channel.published[2]).toEqual({ exchange: '', routingKey: 'p.dead', mandatory: true });
    expect(channel.headers[2]).toMatchObject({ 'x-callback-reason': 'unsettled', 'x-callback-attempts': 2, 'x-callback-returns': 5 });
  });

  it('the copy back cannot be stored either: rejected without requeue, for the broker to dead-letter', async () => {
    const { channel, settled } = hold(['nack', 'nack', 'nack'], { 'x-callback-returns': 5 });
    expect(await settled).toBe(false);
    expect(channel.settled).toEqual(['reject']);
  });

  it('EVENTS=durable: its paused event is confirmed before the copy; one not stored does not hold the callback back', async () => {
    const held = hold(['ack', 'ack'], {}, true);
    expect(await held.settled).toBe(true);
    expect(held.channel.log).toEqual(['publish p.events', 'publish ', 'ack']);
    expect(held.channel.bodies[0]).toMatchObject({ type: 'paused', id: 'c1', attempt: 0 });
    const lost = hold(['nack', 'nack', 'ack'], {}, true);
    expect(await lost.settled).toBe(true);
    expect(lost.channel.log).toEqual(['publish p.events', 'publish p.events', 'publish ', 'ack']);
  });

  it('a channel that closed: throws, leaving the original to the broker', async () => {
    const { channel, settled } = hold(['never']);
    closeUnder(channel);
    await expect(settled).rejects.toThrow();
    expect(channel.settled).toEqual([]);
  });
});

describe('settle with EVENTS=durable', () => {
  const delivered = { settlement: { kind: 'ack' as const }, durable: true };

  it('a delivered callback: its event is confirmed before the ack, with a stable message id', async () => {
    const { channel, settled } = run(['ack'], delivered);
    expect(await settled).toBe(true);
    expect(channel.log).toEqual(['publish p.events', 'ack']);
    expect(channel.bodies[0]).toMatchObject({ type: 'delivered', id: 'c1', attempt: 1, durationMs: 12, worker: 'w/1' });
  });

  it('a retry: copy, then event, then ack', async () => {
    const { channel, settled } = run(['ack', 'ack'], { durable: true });
    expect(await settled).toBe(true);
    expect(channel.log).toEqual(['publish p.delay', 'publish p.events', 'ack']);
    expect(channel.bodies[1]).toMatchObject({ type: 'retry-scheduled' });
  });

  it('a dead letter: its final event first, then the copy, then the ack', async () => {
    const { channel, settled } = run(['ack', 'ack'], { durable: true, settlement: { kind: 'dead', reason: 'exhausted', why: 'HTTP 503' } });
    expect(await settled).toBe(true);
    expect(channel.log).toEqual(['publish p.events', 'publish ', 'ack']);
    expect(channel.bodies[0]).toMatchObject({ type: 'dead', reason: 'exhausted' });
  });

  it('a dead letter whose event is not stored: parked all the same, the lost event reported', async () => {
    const { channel, settled, lostEvents } = run(['nack', 'nack', 'ack'], {
      durable: true,
      settlement: { kind: 'dead', reason: 'exhausted', why: 'HTTP 503' },
    });
    expect(await settled).toBe(true);
    expect(channel.log).toEqual(['publish p.events', 'publish p.events', 'publish ', 'ack']);
    expect(lostEvents).toHaveLength(1);
  });

  it('a retry whose event is not stored is acked all the same: its copy carries it on, never twice', async () => {
    const { channel, settled, lostEvents } = run(['ack', 'nack', 'nack'], { durable: true });
    expect(await settled).toBe(true);
    expect(channel.log).toEqual(['publish p.delay', 'publish p.events', 'publish p.events', 'ack']);
    expect(lostEvents).toHaveLength(1);
  });

  it('a delivered event nacked twice: the callback is acked all the same (never delivered again for its event), the lost event reported', async () => {
    const { channel, settled, redeclared, lostEvents } = run(['nack', 'nack'], delivered);
    expect(await settled).toBe(true);
    expect(redeclared()).toBe(1);
    expect(channel.log).toEqual(['publish p.events', 'publish p.events', 'ack']);
    expect(lostEvents).toHaveLength(1);
  });

  it('a delivered event not confirmed in time: acked, not published twice, never requeued', async () => {
    const { channel, settled, lostEvents } = run(['never'], delivered);
    expect(await settled).toBe(true);
    expect(channel.log).toEqual(['publish p.events', 'ack']);
    expect(lostEvents).toMatchObject([{ code: 'CR_ERR_EVENT_NOT_STORED', cause: { code: 'CR_ERR_PUBLISH_TIMEOUT' } }]);
  });

  it('no copy stored: a dead event (reason unsettled) is confirmed before the original is rejected', async () => {
    const { channel, settled } = run(['nack', 'nack', 'ack'], { durable: true });
    expect(await settled).toBe(false);
    expect(channel.log).toEqual(['publish p.delay', 'publish p.delay', 'publish p.events', 'reject']);
    expect(channel.bodies[2]).toMatchObject({ type: 'dead', reason: 'unsettled' });
  });
});
