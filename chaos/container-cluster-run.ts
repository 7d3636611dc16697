import { inspectBroker } from '../src/topology/connect-topology.js';
import { faultPlan, leadersByNode, type Fault } from './cluster-faults.js';
import { startContainerCluster } from './container-cluster.js';
import type { ChaosEvent } from './driver.js';
import type { Summary } from './report.js';
import { runScenario, type ScenarioResult } from './scenario.js';

export interface ContainerClusterOptions {
  quick: boolean;
  faults: Fault[];
  /** Scheduled callbacks (`--callbacks`); default 50,000, 3,000 with `--quick`. */
  callbacks: number | undefined;
  /** `--ordered-keys`: every third callback carries one of this many order keys, with no `deliverAt` (0: none). */
  orderedKeys: number;
  logDir: string;
  say: (line: string) => void;
}

/** How long each fault is expected to take, to space them; a fault that takes longer delays the next. */
const EXPECTED_MS: Record<Fault, number> = { kill: 55_000, partition: 50_000, rolling: 120_000, replace: 110_000 };
const GAP_MS = 25_000;

/**
 * `--cluster` on containers: three RabbitMQ nodes of the series under test (the rabbitmq/ image), three
 * workers each given every node (each list starting at another node, as a fleet spreads), and callbacks
 * of every fate scheduled ahead so that they wait in the delay levels and fall due at a steady pace
 * while the faults play one after another. Every third callback carries an order key instead of a
 * `deliverAt` and is published at the time it would have fallen due, so the keys' order is checked
 * through the same faults (load.ts publishAt). Queues mode only: the delayed-message plugin keeps its
 * messages on one node (chaos/README.md#clusters) and does not run on 4.3.
 */
export async function containerCluster(scenarios: ScenarioResult[], options: ContainerClusterOptions): Promise<Summary['broker']> {
  const { say, quick } = options;
  say('starting a 3-node cluster of rabbitmq/ image containers…');
  const cluster = await startContainerCluster(3, options.logDir);
  const urls = cluster.slots.map((slot) => slot.url);
  const info = await inspectBroker(urls[0]!);
  say(
    `cluster: ${cluster.slots.map((s) => `${s.node} (127.0.0.1:${s.port})`).join(', ')}; RabbitMQ ${info.version}; image ${cluster.image}`,
  );

  const callbacks = options.callbacks ?? (quick ? 3_000 : 50_000);
  // Every publish confirmed before the first is due (50,000 to quorum queues on three nodes takes a while).
  const afterMs = quick ? 25_000 : Math.max(30_000, callbacks * 1.6);
  const downMs = quick ? 20_000 : 30_000;
  const acts: ChaosEvent[] = [];
  // The first fault after 20 s of callbacks falling due: the delivery rate before it is measured there.
  let at = afterMs + 20_000;
  for (const fault of options.faults) {
    const plan = faultPlan(fault, cluster, downMs, say);
    acts.push({ atMs: at, kind: 'node-fault', label: plan.label, run: plan.run });
    at += EXPECTED_MS[fault] * (quick && fault === 'kill' ? 0.8 : 1) + GAP_MS;
  }
  // Callbacks fall due from the first fault's start until a little after the last one should end.
  const due = { afterMs, spreadMs: at - afterMs - GAP_MS + 10_000 };
  const rotated = (i: number): string => [...urls.slice(i), ...urls.slice(0, i)].join(',');
  const title = `3-node cluster on containers [queues mode]: ${options.faults.join(', ')}`;
  scenarios.push(
    await runScenario(
      {
        title,
        mode: 'queues',
        callbacks,
        spreadMs: 0,
        due,
        quiesceTimeoutMs: quick ? 120_000 : 300_000,
        workerUrls: urls.map((_, i) => rotated(i)),
        publisherUrl: rotated(0),
        inspectUrl: urls[0]!,
        timeline: () => acts,
        traceIds: [],
        logDir: options.logDir,
        orderedKeys: options.orderedKeys,
        onTopology: (names) => leadersByNode(cluster, 0, names.exchange),
      },
      say,
    ),
  );
  return { version: info.version, delayedPlugin: info.hasDelayedPlugin, nodes: 3 };
}
