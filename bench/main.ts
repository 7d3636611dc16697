/**
 * Benchmarks, run with `npm run bench [-- --scenario isolation] [--callbacks N]`.
 * Uses AMQP_URL if set, else the same throwaway broker as the tests. Prints a Markdown report.
 */
import { parseArgs } from 'node:util';
import { startTestBroker } from '../test/support/broker.js';
import { runIsolation, type IsolationRun } from './isolation.js';

const { values } = parseArgs({
  options: { scenario: { type: 'string', default: 'isolation' }, callbacks: { type: 'string', default: '20000' }, 'http-timeout': { type: 'string', default: '10s' } },
});

const fmt = (n: number, digits = 0): string => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

async function isolationScenario(url: string): Promise<void> {
  const options = { url, callbacks: Number(values.callbacks), targets: 20, httpTimeout: values['http-timeout'] ?? '10s', timeLimitMs: 120_000 };
  const base = await runIsolation('fault-free', { ...options, hanging: 0 }, {});
  const runs: IsolationRun[] = [
    base,
    await runIsolation('2 hanging, isolation on', { ...options, hanging: 2 }, {}),
    await runIsolation('2 hanging, isolation off', { ...options, hanging: 2 }, { ISOLATION: 'off' }),
  ];
  process.stdout.write(`\n### Isolation: ${options.targets} targets, ${options.callbacks} callbacks, HTTP_TIMEOUT ${options.httpTimeout}, PREFETCH 100\n\n`);
  process.stdout.write('| run | healthy delivered | healthy throughput /s | ×fault-free | p50 ms | ×fault-free | p99 ms | ×fault-free |\n|---|---|---|---|---|---|---|---|\n');
  for (const run of runs) {
    const delivered = `${run.delivered}/${run.expected}${run.cutOff ? ` (cut off at ${fmt(run.seconds)} s)` : ''}`;
    process.stdout.write(
      `| ${run.name} | ${delivered} | ${fmt(run.throughput)} | ${fmt(run.throughput / base.throughput, 2)} | ${fmt(run.p50)} | ${fmt(run.p50 / base.p50, 2)} | ${fmt(run.p99)} | ${fmt(run.p99 / base.p99, 2)} |\n`,
    );
  }
}

const broker = process.env.AMQP_URL ? undefined : await startTestBroker();
const url = process.env.AMQP_URL ?? broker!.url;
try {
  if (values.scenario === 'isolation') await isolationScenario(url);
  else throw new Error(`unknown scenario ${values.scenario}; known: isolation`);
} finally {
  await broker?.stop();
}
process.exit(0);
