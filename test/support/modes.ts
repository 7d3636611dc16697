import { describe, inject } from 'vitest';

export type TestMode = 'queues' | 'plugin';

/**
 * Runs a suite in both delay modes. Plugin mode runs only where the broker has the plugin, and the
 * suite's name says why it was skipped otherwise.
 */
export function describeEachMode(title: string, suite: (mode: TestMode) => void): void {
  describe(`${title} [queues mode]`, () => suite('queues'));
  const hasPlugin = inject('hasDelayedPlugin');
  describe.skipIf(!hasPlugin)(`${title} [plugin mode]${hasPlugin ? '' : ' (skipped: broker lacks x-delayed-message)'}`, () => suite('plugin'));
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
