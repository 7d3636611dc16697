/**
 * Benchmarks: `npm run bench [-- --quick] [--scenario NAME[,NAME…]] [--shape SHAPE[,SHAPE…]] [--long] [--profile] [--repeat N] [--rate N]`;
 * the pending scenario also takes `--count N --window SECONDS --mode queues,plugin --background N --lead SECONDS`.
 * Uses AMQP_URL if set, else a throwaway broker (test/support/broker.ts). Prints a Markdown table
 * per scenario and writes bench/results/<timestamp>.json; a run of every scenario also latest.json and latest.svg.
 */
import { parseArgs } from 'node:util';
import { startTestBroker } from '../test/support/broker.js';
import { inspectBroker } from '../src/topology/connect-topology.js';
import type { BenchContext, Scenario } from './context.js';
import { removeBenchBuild } from './bench-build.js';
import { findBeamPid, killAllChildren } from './processes.js';
import { brokerInspect, localBrokerCtl } from './broker-tap.js';
import { machineInfo, markdownScenario, writeReport, type BenchReport } from './results.js';
import { backlog } from './scenarios/backlog.js';
import { fairness } from './scenarios/fairness.js';
import { halfLoad } from './scenarios/half-load.js';
import { ingest } from './scenarios/ingest.js';
import { isolation } from './scenarios/isolation.js';
import { limits } from './scenarios/limits.js';
import { ordered } from './scenarios/ordered.js';
import { pending } from './scenarios/pending.js';
import { retryTiming } from './scenarios/retry-timing.js';
import { scaleOut } from './scenarios/scale-out.js';
import { throughput } from './scenarios/throughput.js';

const SCENARIOS: Scenario[] = [throughput, halfLoad, retryTiming, backlog, scaleOut, isolation, fairness, ingest, pending, limits, ordered];

/** A numeric option, or undefined when not given; anything but a number ≥ 0 stops the run before it starts, naming the option. */
function numberOption(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (value.trim() !== '' && Number.isFinite(number) && number >= 0) return number;
  process.stderr.write(`--${name} must be a number ≥ 0, got "${value}"\n`);
  process.exit(2);
}

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    scenario: { type: 'string' },
    profile: { type: 'boolean', default: false },
    rate: { type: 'string' },
    shape: { type: 'string' },
    long: { type: 'boolean', default: false },
    count: { type: 'string' },
    window: { type: 'string' },
    mode: { type: 'string' },
    background: { type: 'string' },
    lead: { type: 'string' },
    repeat: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(
    `usage: npm run bench -- [--quick] [--scenario ${SCENARIOS.map((s) => s.name).join('|')}[,…]] [--shape SHAPE[,…]] [--long] [--profile] [--repeat N] [--rate N] [--count N --window SECONDS --mode queues,plugin --background N --lead SECONDS]\n`,
  );
  process.exit(0);
}
const names = values.scenario ? values.scenario.split(',').map((name) => name.trim()) : SCENARIOS.map((s) => s.name);
const unknown = names.filter((name) => !SCENARIOS.some((s) => s.name === name));
if (unknown.length > 0) {
  process.stderr.write(`unknown scenario ${unknown.join(', ')}; known: ${SCENARIOS.map((s) => s.name).join(', ')}\n`);
  process.exit(2);
}

const numbers = {
  repeat: numberOption('repeat', values.repeat),
  rate: numberOption('rate', values.rate),
  count: numberOption('count', values.count),
  windowS: numberOption('window', values.window),
  background: numberOption('background', values.background),
  leadS: numberOption('lead', values.lead),
};

const isLoopback = (url: string): boolean => ['localhost', '127.0.0.1', '[::1]'].includes(new URL(url).hostname);
const began = Date.now();
const log = (line: string): void => void process.stderr.write(`[${((Date.now() - began) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);
log('starting the broker');
const broker = await startTestBroker();
const stopEverything = async (): Promise<void> => {
  killAllChildren();
  removeBenchBuild();
  await broker.stop().catch(() => {});
};
process.once('SIGINT', () => void stopEverything().finally(() => process.exit(130)));

const report: BenchReport = { startedAt: new Date().toISOString(), finishedAt: '', quick: values.quick, machine: {}, scenarios: {} };
try {
  const info = await inspectBroker(broker.url);
  const port = new URL(broker.url).port;
  const ctx: BenchContext = {
    url: broker.url,
    quick: values.quick,
    broker: {
      version: info.version,
      hasPlugin: info.hasDelayedPlugin,
      source: broker.source,
      beamPid: isLoopback(broker.url) ? findBeamPid(port) : undefined,
      ctl: localBrokerCtl(broker),
      inspect: brokerInspect(broker),
    },
    shared: {},
    options: {
      profile: values.profile,
      repeat: numbers.repeat,
      rate: numbers.rate,
      shapes: values.shape
        ?.split(',')
        .map((shape) => shape.trim())
        .filter(Boolean),
      long: values.long,
      pending: {
        count: numbers.count,
        windowS: numbers.windowS,
        modes: values.mode === undefined ? undefined : (values.mode.split(',').map((mode) => mode.trim()) as Array<'queues' | 'plugin'>),
        background: numbers.background,
        leadS: numbers.leadS,
      },
    },
    log,
  };
  report.machine = machineInfo(ctx.broker);
  log(`RabbitMQ ${info.version} via ${broker.source}; delayed-message plugin: ${info.hasDelayedPlugin ? 'yes' : 'no'}`);
  process.stdout.write(`## callback-relay benchmarks${values.quick ? ' (quick)' : ''}\n\n${JSON.stringify(report.machine)}\n\n`);
  for (const scenario of SCENARIOS.filter((s) => names.includes(s.name))) {
    log(`scenario ${scenario.name}`);
    const started = Date.now();
    try {
      const result = await scenario.run(ctx);
      report.scenarios[scenario.name] = { ...result, seconds: (Date.now() - started) / 1000 };
    } catch (error) {
      log(`scenario ${scenario.name} failed: ${(error as Error).stack ?? error}`);
      report.scenarios[scenario.name] = {
        tables: [],
        data: {},
        notes: [],
        charts: [],
        seconds: (Date.now() - started) / 1000,
        error: (error as Error).message,
      };
    }
    process.stdout.write(markdownScenario(scenario.name, report.scenarios[scenario.name]!));
    process.stdout.write(`_(${report.scenarios[scenario.name]!.seconds.toFixed(0)} s)_\n\n`);
  }
} finally {
  report.finishedAt = new Date().toISOString();
  await stopEverything();
}
for (const path of writeReport(report, names.length === SCENARIOS.length)) log(`wrote ${path}`);
log(`done in ${((Date.now() - began) / 1000).toFixed(0)} s`);
process.exit(Object.values(report.scenarios).some((s) => s.error) ? 1 : 0);
