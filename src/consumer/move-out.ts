import { circuitWait, type Scheduler } from '../isolation/scheduler.js';
import { HEADER } from '../message/headers.js';
import { failedThroughout, scheduleOf, timeoutOf, type ScheduleRules } from '../policy/schedule-end.js';
import type { Lane } from '../reports.js';
import type { Move } from '../settle/settle.js';
import { sourceOf, type Job } from './admit.js';
import type { MessageEffects } from './effects.js';

/*
 * The ways out of the worker for a job that waits, unattempted, its attempt count unchanged: to the
 * overflow queue while its target is busy, through the delay path while its target's circuit is open
 * (or its limit holds it back for long: pipeline.ts). Each is a move (settle/settle.ts): acked once
 * its copy is confirmed; one that cannot be stored stays with the worker, for the pipeline to offer
 * it again. A move rejects when the message's channel is gone (the broker redelivers it then).
 */

/** Moves to the overflow queue under way, per lane: they leave its consumer window once acked. */
export class LaneMoves {
  private readonly moving = new Map<Lane, number>();

  start(lane: Lane): void {
    this.moving.set(lane, (this.moving.get(lane) ?? 0) + 1);
  }

  end(lane: Lane): void {
    const left = (this.moving.get(lane) ?? 1) - 1;
    if (left > 0) this.moving.set(lane, left);
    else this.moving.delete(lane);
  }

  of(lane: Lane): number {
    return this.moving.get(lane) ?? 0;
  }
}

export interface MoveDeps {
  effects: MessageEffects;
  scheduler: Pick<Scheduler<Job>, 'moveTook' | 'offerOwed'>;
  underway: LaneMoves;
  /** P.slow, the overflow queue. */
  slowQueue: string;
  rules: ScheduleRules;
  clock: () => number;
}

/**
 * A busy target's callback leaves its lane for the overflow queue, so the callbacks queued behind it
 * are reached now. True once moved; the scheduler learns what the move cost.
 */
export async function overflow(job: Job, deps: MoveDeps): Promise<boolean> {
  const { clock, underway } = deps;
  underway.start(job.lane);
  try {
    const startedAt = clock();
    const moved = await deps.effects.move(job, job.delivery.id, { kind: 'move', queue: deps.slowQueue }, 'overflow');
    if (moved) deps.scheduler.moveTook(clock() - startedAt);
    return moved;
  } finally {
    underway.end(job.lane);
  }
}

/**
 * What becomes of a callback whose target's circuit is open: parked for its schedule's end
 * (`expired`), queued for its owed request, or deferred through the delay path by `move`.
 */
export type CircuitStep = { kind: 'expired' } | { kind: 'queued' } | { kind: 'defer'; move: Move };

/**
 * A callback whose target's circuit is open is deferred through the delay path, its attempt kept,
 * until the attempt would have ended (circuitWait). Then it is owed its request, made as soon as its
 * target has room: no attempt is ever counted without a request; one at an attempt number the target
 * has not answered here yet gets its request at once (offerOwed: queued then). But the schedule keeps
 * its time: once the rest of it would have ended with every attempt timing out, the target failing
 * throughout, the callback is dead-lettered (`expired`), no later than `ISOLATION=off` would have.
 */
export function circuitStep(job: Job, deps: Pick<MoveDeps, 'scheduler' | 'rules' | 'clock'>): CircuitStep {
  const { delivery } = job;
  const { rules } = deps;
  const nowMs = deps.clock();
  const left = scheduleOf(delivery, rules);
  const wait = circuitWait(delivery.heldSince, delivery.deferrals ?? 0, nowMs, timeoutOf(delivery, rules), left);
  if (wait.expired && failedThroughout(job.target, delivery, rules, nowMs, wait.giveUpAt, left.leftMs)) return { kind: 'expired' };
  if (deps.scheduler.offerOwed(job.target, job, sourceOf(job), nowMs, wait, delivery.attempt) === 'queued') return { kind: 'queued' };
  const headers = { [HEADER.heldSince]: new Date(wait.defer.heldSince).toISOString(), [HEADER.deferrals]: wait.defer.deferrals };
  return { kind: 'defer', move: { kind: 'move', delayMs: wait.defer.delayMs, headers } };
}
