import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { ControlView } from '../control/control-state.js';
import type { Source } from '../isolation/scheduler.js';
import { targetOf, type TargetKey } from '../isolation/target-isolation.js';
import { ranOut, type ScheduleRules } from '../policy/schedule-end.js';
import type { Lane } from '../reports.js';
import { laneBucket } from '../topology/topology-names.js';
import type { Delivery } from './decode.js';
import type { Place } from './effects.js';

/** Step 2's value: a decoded message, admitted to wait for a slot. */
export interface Job extends Place {
  delivery: Delivery;
  target: string;
  /** `delivery.url.origin`, read once. */
  origin: string;
  /** Settles the promise `handle` returned for this message (with the error when settling failed). */
  finish: (error?: unknown) => void;
  /** Its orderKey, when it came from an ordered shard: its key's order holds it (ordered-keys.ts). */
  orderKey?: string | undefined;
}

/** Origins whose lane bucket is remembered at most. */
const BUCKET_CACHE = 10_000;

/** Lane buckets of the origins seen lately (a hash of the origin's bytes each); cleared when it grows past BUCKET_CACHE. */
export class OriginBuckets {
  private readonly buckets = new Map<string, number>();

  of(origin: string): number {
    let bucket = this.buckets.get(origin);
    if (bucket === undefined) {
      if (this.buckets.size >= BUCKET_CACHE) this.buckets.clear();
      bucket = laneBucket(origin);
      this.buckets.set(origin, bucket);
    }
    return bucket;
  }
}

export interface JobDeps {
  targetKey: TargetKey;
  buckets: OriginBuckets;
}

/** Step 1 → 2: a decoded message becomes a job: its target (what isolation schedules by) and lane bucket worked out once. */
export function jobOf(
  delivery: Delivery,
  message: ConsumeMessage,
  channel: ConfirmChannel,
  lane: Lane,
  finish: Job['finish'],
  deps: JobDeps,
): Job {
  // URL.origin is serialised anew on every read: read once per message, its bucket hashed once per origin.
  const origin = delivery.url.origin;
  const target = deps.targetKey === 'origin' ? origin : targetOf(delivery.url, deps.targetKey);
  return { message, channel, lane, delivery, origin, target, bucket: deps.buckets.of(origin), finish };
}

/**
 * What admission makes of a job: a cancelled callback is parked and a paused target's callback held,
 * neither attempted; one whose schedule ran out while circuits held it, its target failing throughout,
 * is parked as `exhausted`; any other waits for a slot.
 */
export type Admission = 'canceled' | 'paused' | 'expired' | 'waits';

export interface AdmitDeps {
  /** The control stream's cancels and pauses, as this worker has read them (src/control/). */
  control?: Pick<ControlView, 'isCancelled' | 'isPaused'> | undefined;
  rules: ScheduleRules;
}

/** Step 2: whether a job may wait for a slot, or what else becomes of it. */
export function admit(job: Job, deps: AdmitDeps, nowMs: number): Admission {
  const { control } = deps;
  const { delivery } = job;
  if (control?.isCancelled(delivery.id, delivery.replayedAt)) return 'canceled';
  if (control?.isPaused(job.origin)) return 'paused';
  if (ranOut(job.target, delivery, deps.rules, nowMs)) return 'expired';
  return 'waits';
}

/**
 * Where a job came from, for the scheduler: a callback from the overflow queue never overflows twice,
 * and an ordered one never at all (P.slow would let its key's next callbacks overtake it).
 */
export const sourceOf = (job: Job): Source => (job.lane === 'slow' || job.orderKey !== undefined ? 'overflow' : 'lane');
