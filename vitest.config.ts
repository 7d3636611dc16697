import { defineConfig } from 'vitest/config';

// Against one real broker: the fast set (`npm test`) and the slow scenarios (`npm run test:slow`).
const brokerProject = (name: string, dir: string) => ({
  test: {
    name,
    include: [`${dir}/**/*.test.ts`],
    globalSetup: ['test/support/global-setup.ts'],
    // One broker, two cores: files run one after another so timing-sensitive tests stay honest.
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});

export default defineConfig({
  test: {
    projects: [
      { test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      // Delivery, retries, producer, ingest, console, security: minutes, not tens.
      brokerProject('integration', 'test/integration'),
      // Broker restarts, long timers, isolation, target limits and their waits, delay accuracy, the control plane,
      // and the longest end-to-end files (the operator CLI, 10,000 malformed messages, ordered keys across workers).
      brokerProject('scenarios', 'test/scenarios'),
    ],
  },
});
