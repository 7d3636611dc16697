import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchContext } from './context.js';
import { spawnRelayWorker, type BenchChild } from './processes.js';
import { benchPublisher } from './publish.js';
import { RESULTS_DIR } from './results.js';
import { freePort, type Scope } from './scope.js';
import type { CallbackPublisher } from '../src/producer/publisher.js';

export interface RelayUnderTest {
  prefix: string;
  publisher: CallbackPublisher;
  worker: BenchChild;
  metricsPort: number;
}

/**
 * A fresh topology prefix with the library's publisher on it and one relay worker process consuming
 * it (settings: the defaults plus `env`), all undone when `scope` closes.
 */
export async function startRelay(ctx: BenchContext, scope: Scope, kind: string, env: Record<string, string> = {}): Promise<RelayUnderTest> {
  const prefix = scope.prefix(kind);
  const { publisher } = benchPublisher(ctx.url, prefix, env);
  scope.add(publisher);
  const metricsPort = await freePort();
  const worker = scope.add(spawnRelayWorker({ AMQP_URL: ctx.url, TOPOLOGY_PREFIX: prefix, METRICS_PORT: String(metricsPort), ...env }));
  await worker.ready;
  return { prefix, publisher, worker, metricsPort };
}

/**
 * The relay's max rate: measured by `throughput` earlier in this run, else `--rate`, else the newest
 * results file in bench/results/ that has a throughput run (a run of other scenarios writes one too).
 */
export async function relayMaxRate(ctx: BenchContext): Promise<{ rate: number; source: string }> {
  if (ctx.options.rate !== undefined) return { rate: ctx.options.rate, source: '--rate' };
  if (ctx.shared.relayRate !== undefined) return { rate: ctx.shared.relayRate, source: 'throughput scenario of this run' };
  const files = readdirSync(RESULTS_DIR)
    .filter((file) => file.endsWith('.json'))
    .map((file) => ({ file, at: statSync(join(RESULTS_DIR, file)).mtimeMs }))
    .sort((a, b) => b.at - a.at);
  for (const { file } of files) {
    try {
      const report = JSON.parse(readFileSync(join(RESULTS_DIR, file), 'utf8')) as {
        scenarios?: { throughput?: { data?: { runs?: Array<{ name: string; rate: number }> } } };
      };
      const run = report.scenarios?.throughput?.data?.runs?.find((r) => r.name === 'relay, every feature on');
      if (run) return { rate: run.rate, source: `bench/results/${file}` };
    } catch {
      // not a results file
    }
  }
  return { rate: 1000, source: 'default (no throughput measured; pass --rate N)' };
}
