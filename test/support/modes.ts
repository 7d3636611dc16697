import { describe, inject } from 'vitest';

export type TestMode = 'queues' | 'plugin';

/**
 * The delay modes a run covers: TEST_MODES (comma-separated, default both). CI's broker matrix uses it
 * to spend a series' time where it matters, e.g. plugin mode only on a broker that has the plugin.
 */
export function testModes(env: NodeJS.ProcessEnv = process.env): TestMode[] {
  const given = env.TEST_MODES?.trim();
  if (!given) return ['queues', 'plugin'];
  const modes = given.split(',').map((mode) => mode.trim());
  for (const mode of modes)
    if (mode !== 'queues' && mode !== 'plugin')
      throw new Error(`TEST_MODES: unknown delay mode "${mode}" (value "${given}"; use queues, plugin or both)`);
  return modes as TestMode[];
}

/** Why plugin-mode tests do not run here, or undefined when they do: for the skipped tests' names. */
export function pluginModeSkipReason(): string | undefined {
  if (!testModes().includes('plugin')) return `TEST_MODES=${process.env.TEST_MODES}`;
  if (!inject('hasDelayedPlugin')) return `broker lacks x-delayed-message (RabbitMQ ${inject('brokerVersion')})`;
  return undefined;
}

/**
 * Runs a suite in both delay modes. Plugin mode runs only where the broker has the plugin, and the
 * suite's name says why it was skipped otherwise; TEST_MODES can leave a mode out (named the same way).
 */
export function describeEachMode(title: string, suite: (mode: TestMode) => void): void {
  const queues = testModes().includes('queues');
  describe.skipIf(!queues)(`${title} [queues mode]${queues ? '' : ` (skipped: TEST_MODES=${process.env.TEST_MODES})`}`, () =>
    suite('queues'),
  );
  const skip = pluginModeSkipReason();
  describe.skipIf(skip !== undefined)(`${title} [plugin mode]${skip ? ` (skipped: ${skip})` : ''}`, () => suite('plugin'));
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
