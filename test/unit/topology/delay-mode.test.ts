import { describe, it, expect } from 'vitest';
import { isRelayError } from '../../../src/errors.js';
import { resolveDelayMode } from '../../../src/topology/delay-levels.js';

describe('resolveDelayMode', () => {
  it('takes the plugin in auto mode when the broker has it', () => {
    expect(resolveDelayMode('auto', true)).toBe('plugin');
  });

  it('falls back to queues in auto mode without the plugin', () => {
    expect(resolveDelayMode('auto', false)).toBe('queues');
  });

  it('uses queues when asked, plugin or not', () => {
    expect(resolveDelayMode('queues', true)).toBe('queues');
    expect(resolveDelayMode('queues', false)).toBe('queues');
  });

  it('uses the plugin when asked and available', () => {
    expect(resolveDelayMode('plugin', true)).toBe('plugin');
  });

  it('throws CR_ERR_DELAY_MODE when the plugin is asked for but missing', () => {
    let caught: unknown;
    try {
      resolveDelayMode('plugin', false);
    } catch (error) {
      caught = error;
    }
    expect(isRelayError(caught, 'CR_ERR_DELAY_MODE')).toBe(true);
    expect((caught as Error).message).toMatch(/DELAY_MODE=plugin/);
    expect((caught as Error).message).toMatch(/DELAY_MODE=queues/);
  });
});
