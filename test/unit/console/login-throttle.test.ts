import { describe, expect, it } from 'vitest';
import { LoginThrottle, retryAfterSeconds } from '../../../src/console/login-throttle.js';

const LIMITS = { perClient: 3, global: 10, windowMs: 60_000, maxClients: 5 };

describe('LoginThrottle', () => {
  it('refuses a client past its failures until its window ends, then counts again', () => {
    let now = 0;
    const throttle = new LoginThrottle(LIMITS, () => now);
    expect(throttle.fail('a')).toBeUndefined();
    expect(throttle.fail('a')).toBeUndefined();
    expect(throttle.check('a')).toBeUndefined();
    expect(throttle.fail('a')).toEqual({ scope: 'client', retryAfterMs: 60_000 });
    now = 15_000;
    expect(throttle.check('a')).toEqual({ scope: 'client', retryAfterMs: 45_000 });
    expect(retryAfterSeconds(throttle.check('a') ?? { scope: 'client', retryAfterMs: 0 })).toBe(45);
    expect(throttle.check('b')).toBeUndefined();
    now = 60_000;
    expect(throttle.check('a')).toBeUndefined();
    expect(throttle.fail('a')).toBeUndefined();
  });

  it('a success clears its client, not the global count', () => {
    const throttle = new LoginThrottle(LIMITS, () => 0);
    throttle.fail('a');
    throttle.fail('a');
    throttle.succeed('a');
    throttle.fail('a');
    throttle.fail('a');
    expect(throttle.check('a')).toBeUndefined();
  });

  it('past the global count every client is refused: rotating addresses gains nothing', () => {
    let now = 0;
    const throttle = new LoginThrottle(LIMITS, () => now);
    const earned = Array.from({ length: 10 }, (_, i) => throttle.fail(`10.0.0.${i}`));
    expect(earned.slice(0, 9).every((e) => e === undefined)).toBe(true);
    expect(earned[9]).toEqual({ scope: 'global', retryAfterMs: 60_000 });
    expect(throttle.check('192.0.2.1')).toEqual({ scope: 'global', retryAfterMs: 60_000 });
    now = 60_000;
    expect(throttle.check('192.0.2.1')).toBeUndefined();
  });

  it('remembers at most maxClients addresses, dropping ended windows and then the oldest', () => {
    let now = 0;
    const throttle = new LoginThrottle({ ...LIMITS, global: 1_000_000 }, () => now);
    for (let i = 0; i < 1_000; i += 1) {
      now += 1;
      throttle.fail(`198.51.100.${i}`);
      expect(throttle.size).toBeLessThanOrEqual(5);
    }
    // The newest addresses are the ones kept.
    for (let i = 0; i < 2; i += 1) throttle.fail('198.51.100.999');
    expect(throttle.check('198.51.100.999')).toMatchObject({ scope: 'client' });
  });
});
