import { describe, expect, it } from 'vitest';
import { UnroutedPause } from '../../../src/events/unrouted-pause.js';

describe('UnroutedPause', () => {
  it('publishes every type until the broker returns one', () => {
    const pause = new UnroutedPause(1_000, () => 0);
    expect(pause.shouldPublish('delivered')).toBe(true);
    expect(pause.shouldPublish('delivered')).toBe(true);
  });

  it('pauses a returned type for pauseMs, then lets one probe through', () => {
    let now = 0;
    const pause = new UnroutedPause(1_000, () => now);
    pause.returned('delivered');
    expect(pause.shouldPublish('delivered')).toBe(false);
    now = 999;
    expect(pause.shouldPublish('delivered')).toBe(false);
    now = 1_000;
    expect(pause.shouldPublish('delivered')).toBe(true);
    // The probe may still come back: no other event goes out meanwhile (no burst each second).
    now = 1_500;
    expect(pause.shouldPublish('delivered')).toBe(false);
    // Nothing returned the probe within probeWaitMs: a queue is bound now, every event goes out.
    now = 2_000;
    expect(pause.shouldPublish('delivered')).toBe(true);
    expect(pause.shouldPublish('delivered')).toBe(true);
  });

  it('waits probeWaitMs for a probe to come back, when given', () => {
    let now = 0;
    const pause = new UnroutedPause(1_000, () => now, 200);
    pause.returned('delivered');
    now = 1_000;
    expect(pause.shouldPublish('delivered')).toBe(true);
    now = 1_199;
    expect(pause.shouldPublish('delivered')).toBe(false);
    now = 1_200;
    expect(pause.shouldPublish('delivered')).toBe(true);
  });

  it('pauses each routing key on its own', () => {
    const pause = new UnroutedPause(1_000, () => 0);
    pause.returned('delivered');
    expect(pause.shouldPublish('delivered')).toBe(false);
    expect(pause.shouldPublish('dead')).toBe(true);
  });

  it('a returned probe pauses the type again', () => {
    let now = 0;
    const pause = new UnroutedPause(1_000, () => now);
    pause.returned('dead');
    now = 1_500;
    expect(pause.shouldPublish('dead')).toBe(true);
    pause.returned('dead');
    expect(pause.shouldPublish('dead')).toBe(false);
    now = 2_499;
    expect(pause.shouldPublish('dead')).toBe(false);
    now = 2_500;
    expect(pause.shouldPublish('dead')).toBe(true);
  });

  it('a wall clock stepped back does not stretch the pause', () => {
    let now = 10_000;
    const pause = new UnroutedPause(1_000, () => now);
    pause.returned('delivered');
    now = 1_000;
    expect(pause.shouldPublish('delivered')).toBe(true);
  });
});
