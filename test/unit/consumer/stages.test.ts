import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import { describe, expect, it } from 'vitest';
import { admit, jobOf, OriginBuckets, sourceOf, type Job } from '../../../src/consumer/admit.js';
import { attempt, type AttemptDeps } from '../../../src/consumer/attempt.js';
import { concludeAttempt, concludeInvalid, concludeUnattempted, settleConcluded, type Concluded } from '../../../src/consumer/conclude.js';
import type { Delivery } from '../../../src/consumer/decode.js';
import type { MessageEffects, Place } from '../../../src/consumer/effects.js';
import { circuitStep, LaneMoves, overflow, type MoveDeps } from '../../../src/consumer/move-out.js';
import { AutoPause } from '../../../src/control/auto-pause.js';
import { NO_EFFECTS, type Effects, type Scheduler } from '../../../src/isolation/scheduler.js';
import { createLogger } from '../../../src/logger.js';
import { HEADER } from '../../../src/message/headers.js';
import type { RetryPolicy } from '../../../src/policy/decide.js';
import type { ScheduleRules } from '../../../src/policy/schedule-end.js';
import { RAN_OUT } from '../../../src/policy/verdict.js';
import type { AttemptReport, MoveKind } from '../../../src/reports.js';
import type { Move, Settlement } from '../../../src/settle/settle.js';
import { topologyNames } from '../../../src/topology/topology-names.js';

// Each step of the message path called alone, over the values the step before hands on; what the
// broker does is recorded by a stand-in of the pipeline's own effects port (effects.ts). The broker
// itself is exercised by test/integration.

const NOW = Date.parse('2025-01-01T00:10:00.000Z');
const clock = (): number => NOW;
const names = topologyNames('stages');
const logger = createLogger('silent');
const retry: RetryPolicy = { schedule: [1_000, 2_000], maxAttempts: 3, jitter: 0, retryAfterMaxMs: 60_000, successBody: '' };
const rules = (failing?: boolean): ScheduleRules => ({
  retry,
  timeoutMs: 1_000,
  failedThroughout: failing === undefined ? undefined : () => failing,
});

const delivery = (fields: Partial<Delivery> = {}): Delivery => ({
  id: 'cb-1',
  callback: { url: 'https://example.com/hook', body: { a: 1 } },
  url: new URL('https://example.com/hook'),
  payload: '{"a":1}',
  attempt: 1,
  firstAttemptAt: undefined,
  ...fields,
});

const message = { content: Buffer.from('{}'), fields: {}, properties: { headers: {} } } as unknown as ConsumeMessage;
const channel = {} as ConfirmChannel;

function job(fields: Partial<Delivery> = {}, lane = '0'): Job & { finished: unknown[] } {
  const finished: unknown[] = [];
  const made = jobOf(delivery(fields), message, channel, lane, (error) => finished.push(error ?? 'ok'), {
    targetKey: 'origin',
    buckets: new OriginBuckets(),
  });
  return Object.assign(made, { finished });
}

/** The effects port, recording what the stages asked of it; `stores` answers each settle and move in turn (default: stored). */
class RecordingEffects implements MessageEffects {
  readonly done: Array<{ what: string; settlement?: Settlement | Move; report?: AttemptReport; kind?: MoveKind }> = [];
  constructor(private readonly stores: boolean[] = []) {}
  async settle(_at: Place, settlement: Settlement, _record: unknown, report: AttemptReport): Promise<boolean> {
    this.done.push({ what: 'settle', settlement, report });
    return this.stores.shift() ?? true;
  }
  async move(_at: Place, _id: string, move: Move, kind: MoveKind): Promise<boolean> {
    this.done.push({ what: 'move', settlement: move, kind });
    return this.stores.shift() ?? true;
  }
  async sendBack(): Promise<void> {
    this.done.push({ what: 'send-back' });
  }
  giveBack(): void {
    this.done.push({ what: 'give-back' });
  }
}

describe('jobOf', () => {
  it('works out the target and the lane bucket once per origin', () => {
    const buckets = new OriginBuckets();
    const first = jobOf(delivery(), message, channel, '0', () => {}, { targetKey: 'origin', buckets });
    expect(first).toMatchObject({ origin: 'https://example.com', target: 'https://example.com', lane: '0' });
    expect(buckets.of('https://example.com')).toBe(first.bucket);
    expect(sourceOf(first)).toBe('lane');
    expect(sourceOf(job({}, 'slow'))).toBe('overflow');
  });
});

describe('admit', () => {
  const control = (cancelled: boolean, paused: boolean) => {
    const asked: unknown[] = [];
    return { asked, view: { isCancelled: (...args: unknown[]) => (asked.push(args), cancelled), isPaused: () => paused } };
  };

  it('parks a cancelled callback, passing on the replay stamp decode read', () => {
    const { asked, view } = control(true, true);
    expect(admit(job({ replayedAt: '2025-01-01T00:00:00.000Z' }), { control: view, rules: rules() }, NOW)).toBe('canceled');
    expect(asked).toEqual([['cb-1', '2025-01-01T00:00:00.000Z']]);
  });

  it("holds a paused target's callback, parks one whose schedule ran out, lets any other wait", () => {
    expect(admit(job(), { control: control(false, true).view, rules: rules() }, NOW)).toBe('paused');
    const held = { attempt: 3, heldSince: NOW - 1_000 };
    expect(admit(job(held), { rules: rules(true) }, NOW)).toBe('expired');
    expect(admit(job(held), { rules: rules(false) }, NOW)).toBe('waits');
    expect(admit(job(), { rules: rules(true) }, NOW)).toBe('waits');
  });
});

describe('attempt', () => {
  function deps(send: AttemptDeps['send']) {
    const told: string[] = [];
    const scheduler = {
      slowThresholdMs: undefined,
      overdue: () => NO_EFFECTS,
      complete: (target: string, kind: string, outcome: { status?: number; error?: string }) => (
        told.push(`complete ${target} ${kind} ${outcome.status ?? outcome.error}`),
        NO_EFFECTS
      ),
    } as unknown as Pick<Scheduler<Job>, 'slowThresholdMs' | 'overdue' | 'complete'>;
    const attemptDeps: AttemptDeps = {
      scheduler,
      send,
      clock,
      rules: rules(),
      apply: (effects: Effects<Job>) => told.push(`apply ${effects.circuitOpen.length}`),
      freed: () => told.push('freed'),
    };
    return { told, attemptDeps };
  }

  it('sends the request, then tells the scheduler and frees the slot before anything is decided', async () => {
    const { told, attemptDeps } = deps(async () => ({ status: 204, durationMs: 3 }));
    const one = job();
    const attempted = await attempt(one, 'attempt', attemptDeps);
    expect(attempted).toEqual({ job: one, outcome: { status: 204, durationMs: 3 }, startedAt: NOW, span: undefined });
    expect(told).toEqual(['complete https://example.com attempt 204', 'apply 0', 'freed']);
  });

  it('takes a send that rejects as a failed request', async () => {
    const { told, attemptDeps } = deps(() => Promise.reject(new Error('boom')));
    expect((await attempt(job(), 'probe', attemptDeps)).outcome).toEqual({ error: 'Error: boom', durationMs: 0 });
    expect(told[0]).toBe('complete https://example.com probe Error: boom');
  });
});

describe('concludeAttempt', () => {
  const attempted = (status: number, fields: Partial<Delivery> = {}) => ({
    job: job(fields),
    outcome: { status, durationMs: 5 },
    startedAt: NOW - 5,
    span: undefined,
  });

  it('acks a success, reporting the attempt', () => {
    const concluded = concludeAttempt(attempted(200), { rules: rules(), random: () => 0.5 }, NOW);
    expect(concluded.settlement).toEqual({ kind: 'ack' });
    expect(concluded.report).toMatchObject({
      kind: 'attempt',
      id: 'cb-1',
      target: 'https://example.com',
      lane: '0',
      attempt: 1,
      nextAttemptAt: undefined,
    });
    expect(concluded.streak).toBe('https://example.com');
  });

  it('schedules a retry and says when it is due', () => {
    const { settlement, report } = concludeAttempt(attempted(503), { rules: rules(), random: () => 0.5 }, NOW);
    expect(settlement).toEqual({ kind: 'retry', delayMs: 1_000, attempt: 2, why: 'HTTP 503' });
    expect(report.nextAttemptAt).toBe(new Date(NOW + 1_000).toISOString());
  });

  it("parks a held callback's retry due past its schedule's end, its target failing throughout", () => {
    const { settlement, record } = concludeAttempt(attempted(503, { heldMs: 60_000 }), { rules: rules(true), random: () => 0.5 }, NOW);
    expect(settlement).toEqual({ kind: 'dead', reason: 'exhausted', why: RAN_OUT });
    expect(record.heldMs).toBe(60_000);
  });
});

describe('conclusions without an attempt', () => {
  it('parks an invalid message, its attempts before counted', () => {
    expect(concludeInvalid({ ok: false, id: 'x', attempt: 2, error: 'not JSON' })).toEqual({
      settlement: { kind: 'dead', reason: 'invalid', why: 'not JSON' },
      record: { id: 'x', attempts: 1, firstAttemptAt: undefined, lastAttemptAt: undefined, lastStatus: undefined, lastError: 'not JSON' },
      report: { kind: 'invalid', id: 'x', error: 'not JSON' },
    });
  });

  it('parks a cancelled callback, holds a paused one in P.paused, parks an expired one as exhausted', () => {
    const one = job({ attempt: 3, firstAttemptAt: '2025-01-01T00:00:00.000Z' });
    const canceled = concludeUnattempted(one, 'canceled', names);
    expect(canceled.settlement).toEqual({ kind: 'dead', reason: 'canceled', why: 'canceled by a cancel marker' });
    expect(canceled.record).toMatchObject({ attempts: 2, firstAttemptAt: '2025-01-01T00:00:00.000Z', lastError: undefined });
    expect(canceled.report).toMatchObject({ kind: 'canceled', attempt: 2 });
    expect(concludeUnattempted(one, 'paused', names).settlement).toEqual({
      kind: 'hold',
      queue: names.pausedQueue,
      returnTo: { queue: names.workQueues[0], deadQueue: names.deadQueue },
    });
    const expired = concludeUnattempted(one, 'expired', names);
    expect(expired.settlement).toEqual({ kind: 'dead', reason: 'exhausted', why: RAN_OUT });
    expect(expired.report).toMatchObject({ kind: 'expired', why: RAN_OUT });
    expect(expired.streak).toBeUndefined();
  });
});

describe('settleConcluded', () => {
  const failedAttempt = (): Concluded =>
    concludeAttempt(
      { job: job(), outcome: { status: 500, durationMs: 1 }, startedAt: NOW, span: undefined },
      { rules: rules(), random: () => 0.5 },
      NOW,
    );

  it('carries the conclusion out, and pauses a target whose attempts kept failing', async () => {
    const effects = new RecordingEffects();
    const paused: string[] = [];
    const deps = {
      effects,
      autoPause: new AutoPause(0, 10, 2),
      control: { pauseTarget: (origin: string) => paused.push(origin) },
      logger,
      clock,
    };
    await settleConcluded(job(), failedAttempt(), deps);
    expect(paused).toEqual([]);
    await settleConcluded(job(), failedAttempt(), deps);
    expect(paused).toEqual(['https://example.com']);
    expect(effects.done.map(({ what, settlement }) => `${what} ${settlement?.kind}`)).toEqual(['settle retry', 'settle retry']);
  });

  it('counts nothing toward a streak when the settlement fell back to a rejection', async () => {
    const effects = new RecordingEffects([false, false]);
    const paused: string[] = [];
    const deps = {
      effects,
      autoPause: new AutoPause(0, 10, 1),
      control: { pauseTarget: (origin: string) => paused.push(origin) },
      logger,
      clock,
    };
    await settleConcluded(job(), failedAttempt(), deps);
    expect(paused).toEqual([]);
  });
});

describe('moves out of the worker', () => {
  function moveDeps(effects: MessageEffects, owed: 'queued' | 'circuit-open' = 'circuit-open') {
    const took: number[] = [];
    const scheduler = { moveTook: (ms: number) => took.push(ms), offerOwed: () => owed } as Pick<Scheduler<Job>, 'moveTook' | 'offerOwed'>;
    const deps: MoveDeps = { effects, scheduler, underway: new LaneMoves(), slowQueue: names.slowQueue, rules: rules(false), clock };
    return { deps, took };
  }

  it("moves a busy target's callback to the overflow queue, counted as moving out of its lane meanwhile", async () => {
    const effects = new RecordingEffects([true, false]);
    const { deps, took } = moveDeps(effects);
    const moving = overflow(job(), deps);
    expect(deps.underway.of('0')).toBe(1);
    expect(await moving).toBe(true);
    expect(deps.underway.of('0')).toBe(0);
    expect(took).toEqual([0]);
    expect(await overflow(job(), deps)).toBe(false);
    expect(took).toEqual([0]);
    expect(effects.done).toEqual([
      { what: 'move', settlement: { kind: 'move', queue: names.slowQueue }, kind: 'overflow' },
      { what: 'move', settlement: { kind: 'move', queue: names.slowQueue }, kind: 'overflow' },
    ]);
  });

  it("defers a callback whose target's circuit is open, its deferrals counted in the headers decode read", () => {
    const { deps } = moveDeps(new RecordingEffects());
    const step = circuitStep(job({ heldSince: NOW - 100, deferrals: 2 }), deps);
    expect(step).toEqual({
      kind: 'defer',
      move: { kind: 'move', delayMs: 1_000, headers: { [HEADER.heldSince]: new Date(NOW - 100).toISOString(), [HEADER.deferrals]: 3 } },
    });
  });

  it('queues a callback owed its request, and parks one whose schedule ran out, its target failing throughout', () => {
    expect(circuitStep(job({ heldSince: NOW - 2_000 }), moveDeps(new RecordingEffects(), 'queued').deps)).toEqual({ kind: 'queued' });
    const { deps } = moveDeps(new RecordingEffects());
    expect(circuitStep(job({ attempt: 3, heldSince: NOW - 1_000 }), { ...deps, rules: rules(true) })).toEqual({ kind: 'expired' });
  });
});
