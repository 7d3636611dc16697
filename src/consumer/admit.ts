import type { Slot } from '../policy/bulkhead.js';
import type { Admission, TargetIsolation } from '../policy/target-isolation.js';

/** The queue a message was consumed from. */
export type Lane = 'main' | 'slow';

/** What the admit step lets happen: deliver (with a main-lane slot), or move the message on. */
export type Admitted = { kind: 'deliver'; slot: Slot | undefined } | Exclude<Admission, { kind: 'deliver' | 'wait' }>;

type Release = (admitted: Exclude<Admission, { kind: 'wait' }>) => void;

/**
 * Step 2 of the main lane: asks the isolation policy whether the message's target may take a
 * delivery slot, and parks the message in its target's waiting room when the policy says `wait`.
 * The slow lane, or a worker with isolation off, always delivers.
 */
export class TargetGate {
  private readonly rooms = new Map<string, Release[]>();

  constructor(private readonly isolation: TargetIsolation | undefined) {}

  async admit(target: string, lane: Lane): Promise<Admitted> {
    if (!this.isolation || lane === 'slow') return { kind: 'deliver', slot: undefined };
    const admission = this.isolation.admit(target);
    if (admission.kind !== 'wait') return admission;
    return new Promise((resolve) => {
      const room = this.rooms.get(target) ?? [];
      room.push(resolve);
      this.rooms.set(target, room);
    });
  }

  /** After a slot of `target` freed or its health changed: let its waiting messages go, or move them on. */
  pump(target: string): void {
    const room = this.rooms.get(target);
    if (!room || !this.isolation) return;
    while (room.length > 0) {
      const admission = this.isolation.readmit(target);
      if (admission.kind === 'wait') break;
      room.shift()?.(admission);
    }
    if (room.length === 0) this.rooms.delete(target);
  }
}
