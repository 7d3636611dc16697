/**
 * What sets the pace of a target's attempts: its receiver, or the worker's own machine. Each target's
 * mean attempt time, the median of them, what a move to the overflow queue takes, and how busy the
 * worker's event loop is. Busy targets (busy-targets.ts) ask it whether moving a backlog is worth its
 * cost, and which backlogs the machine, not their receiver, holds back. Pure: durations are inputs.
 * Why each threshold is where it is: docs/isolation.md.
 */
export class AttemptPace {
  /** Each target's mean attempt time (ms, moving average), the most recently finished last; bounded. */
  private readonly attemptMs = new Map<string, number>();
  /** The median of the targets' mean attempt times; worked out once per sweep that asks (undefined until then). */
  private medianAttemptMs: number | undefined;
  /** What a move to the overflow queue takes (ms, moving average); 0 until one was measured. */
  private moveMs = 0;
  /** How busy the worker's event loop is (0–1): the latest sweep's sample, and their moving average. */
  private loopLatest = 0;
  private loopAverage = 0;

  /** `maxTargets`: targets whose attempt time is remembered at most. */
  constructor(private readonly maxTargets: number) {}

  /** An attempt of `target` ended after `durationMs`. */
  attemptTook(target: string, durationMs: number): void {
    const before = this.attemptMs.get(target);
    this.attemptMs.delete(target);
    this.attemptMs.set(target, before === undefined ? durationMs : before + (durationMs - before) * MOVING_AVERAGE_WEIGHT);
    // The least recently finished target is forgotten first: its average is rebuilt by its next attempts.
    if (this.attemptMs.size > this.maxTargets) this.attemptMs.delete(this.attemptMs.keys().next().value as string);
  }

  /** A move to the overflow queue took this long, publish to ack. */
  moveTook(durationMs: number): void {
    this.moveMs = this.moveMs === 0 ? durationMs : this.moveMs + (durationMs - this.moveMs) * MOVING_AVERAGE_WEIGHT;
  }

  /** A sweep's sample of how busy the event loop was since the last one (0–1); the median is worked out afresh when next asked. */
  sampleLoop(loopBusy: number): void {
    this.loopLatest = loopBusy;
    this.loopAverage += (loopBusy - this.loopAverage) * MOVING_AVERAGE_WEIGHT;
    this.medianAttemptMs = undefined;
  }

  /**
   * Saturated as soon as one sweep's sample says so (a pre-filled queue at start), and until the
   * average falls well below: then every attempt waits for the worker, not for its receiver.
   */
  saturated(): boolean {
    return this.loopLatest >= SATURATED_LOOP || this.loopAverage >= SATURATED_LOOP_AVERAGE;
  }

  /** Its attempts take ALWAYS_WORTH_MS longer than the median target's (than nothing, with fewer than two targets timed). */
  slowByItself(target: string): boolean {
    return (this.attemptMs.get(target) ?? 0) - this.medianMs() >= ALWAYS_WORTH_MS;
  }

  /**
   * Moving a waiting callback costs a confirmed publish and an ack; it lets what is queued behind it
   * through sooner only where the target's attempts take much longer than that: MOVE_WORTH times a
   * move. A move's time is its confirm's latency, which grows with a loaded broker, so attempts of
   * ALWAYS_WORTH_MS are worth a move too, unless the worker itself is saturated: then its own wait is
   * in every target's attempts, and only a target ALWAYS_WORTH_MS slower than the median one is slow,
   * whatever a move takes (with fewer than two targets timed there is no median to measure against).
   * A target that hangs is worth moving whatever this says (busy-targets.ts).
   */
  worthMoving(target: string): boolean {
    const attemptMs = this.attemptMs.get(target) ?? 0;
    const worthItsMove = this.moveMs > 0 && attemptMs >= MOVE_WORTH * this.moveMs;
    // Until a move has been timed its cost is unknown: only attempts that are slow by any measure.
    if (!this.saturated()) return worthItsMove || attemptMs >= ALWAYS_WORTH_MS;
    if (this.pacedByMachine(target)) return false;
    return worthItsMove || (this.medianMs() > 0 && this.slowByItself(target));
  }

  /**
   * The worker is saturated and the target's attempts take no more than MOVE_WORTH times the median
   * target's (timed, with another target to compare): its own wait for the worker, not its receiver,
   * sets their pace. Its backlog is not worth a move then, and it keeps its slots (FairShare.keep).
   */
  pacedByMachine(target: string): boolean {
    if (!this.saturated()) return false;
    const medianMs = this.medianMs();
    const attemptMs = this.attemptMs.get(target);
    return medianMs > 0 && attemptMs !== undefined && attemptMs <= MOVE_WORTH * medianMs;
  }

  private medianMs(): number {
    return (this.medianAttemptMs ??= median(this.attemptMs));
  }
}

/** A target's backlog is worth moving when its mean attempt takes this many times a move. */
const MOVE_WORTH = 3;
/** Attempts this long are worth a move whatever a move takes now (a loaded worker's instant answers take far less). */
const ALWAYS_WORTH_MS = 150;
/** An event loop busy this share of the time is saturated: its attempt times say little of its receivers. */
const SATURATED_LOOP = 0.8;
/** … and stays saturated while the moving average of its samples is this high (about three idle sweeps after a busy stretch). */
const SATURATED_LOOP_AVERAGE = 0.5;
/** The weight of the newest sample in a moving average (attempt times, move times, loop samples). */
const MOVING_AVERAGE_WEIGHT = 0.2;
/** Values the median is taken of at most (every n-th beyond), so that a sweep stays cheap with thousands of targets. */
const MEDIAN_SAMPLE = 1_024;

/** The median of `values` (sampled evenly past MEDIAN_SAMPLE); 0 for fewer than two: one target alone is no measure of the others. */
function median(values: Map<string, number>): number {
  const every = Math.ceil(values.size / MEDIAN_SAMPLE);
  const sample: number[] = [];
  let i = 0;
  for (const value of values.values()) if (i++ % every === 0) sample.push(value);
  sample.sort((a, b) => a - b);
  return sample.length < 2 ? 0 : (sample[Math.floor((sample.length - 1) / 2)] as number);
}
