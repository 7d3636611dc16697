/**
 * "Prove no loss": `npm run chaos [-- --quick | --cluster [--quick] [--node-kill | --node-loss]] [--callbacks N] [--canary] [--mode queues|plugin] [--events durable] [--cancel] [--ordered-keys N]`.
 * `--cluster` with TEST_BROKER=container (or `--containers`): three rabbitmq/ image containers, callbacks
 * pending in the delay levels, and node faults (`--fault kill|partition|rolling|replace`, repeatable).
 * `--pending` runs only the "pending at scale" scenario (100,000 callbacks scheduled ahead; 5,000 with
 * `--quick`), which the single-node runs also end with. `--events durable` runs the workers with EVENTS=durable and also fails if a callback's final outcome
 * event is missing or false. `--cancel` cancels every `always-fail` callback during its retries.
 * Starts throwaway brokers, workers and a ledger receiver, publishes scripted callbacks while killing
 * workers, restarting brokers and cutting connections, then checks every callback: delivered, or parked
 * in P.dead with the reason its fate implies. Every third callback of the single-node and cluster runs
 * (not of pending at scale) carries one of 50 order keys (`--ordered-keys N`; 0: none), and each key's
 * requests are checked for order. Exits 1 if one was lost, or parked although its script answers 2xx within MAX_ATTEMPTS, or a
 * callback of a key was requested before an earlier one was settled. Summary: chaos/results/latest.json.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { inspectBroker } from '../src/topology/connect-topology.js';
import { installCleanupHandlers, runCleanup } from './cleanup.js';
import { startCluster } from './cluster.js';
import { parseFaults } from './cluster-faults.js';
import { containerCluster } from './container-cluster-run.js';
import { brokerChoice } from '../test/support/broker-image.js';
import { spaced, type ChaosEvent } from './driver.js';
import { Canary } from './canary.js';
import { formatScenario, writeSummary, type Skipped, type Summary } from './report.js';
import { runScenario, type ScenarioResult, type ScenarioSpec } from './scenario.js';
import { queueDepths } from './queues.js';
import { ORDERED_KEYS } from './ordered.js';
import { startChaosNode } from './single-node.js';
import type { WorkerPool } from './worker-pool.js';

type Run = Parameters<ScenarioSpec['timeline']>[0];

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    cluster: { type: 'boolean', default: false },
    'node-kill': { type: 'boolean', default: false },
    'node-loss': { type: 'boolean', default: false },
    callbacks: { type: 'string' },
    canary: { type: 'boolean', default: false },
    events: { type: 'string' },
    cancel: { type: 'boolean', default: false },
    mode: { type: 'string' },
    pending: { type: 'boolean', default: false },
    containers: { type: 'boolean', default: false },
    fault: { type: 'string', multiple: true },
    'ordered-keys': { type: 'string' },
  },
});
// --cluster with TEST_BROKER=container (or --containers): three rabbitmq/ image containers and node faults (container-cluster-run.ts).
const onContainers = values.cluster && (values.containers || brokerChoice(process.env) === 'container');
const faults = onContainers ? parseFaults(values.fault, values.quick) : [];
if (values.fault && !onContainers) throw new Error('--fault: needs --cluster on containers (TEST_BROKER=container or --containers)');
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
const LOGS = `${RESULTS}logs`;
const say = (line: string): void => void process.stdout.write(`${line}\n`);
const NO_PLUGIN = 'skipped: broker lacks x-delayed-message';

/** Sizes and chaos timelines. quick: CI-sized (< 3 min); full: 50k callbacks (< 20 min); cluster: 5k. */
const PROFILE = values.cluster
  ? { callbacks: values.quick ? 2_000 : 5_000, spreadMs: values.quick ? 40_000 : 60_000, quiesceMs: 180_000 }
  : values.quick
    ? { callbacks: 2_000, spreadMs: 40_000, quiesceMs: 90_000 }
    : { callbacks: 50_000, spreadMs: 480_000, quiesceMs: 300_000 };
const callbacks = values.callbacks ? Number(values.callbacks) : PROFILE.callbacks;
if (!Number.isInteger(callbacks) || callbacks < 1) throw new Error(`--callbacks: a whole number ≥ 1, got ${values.callbacks}`);
if (values.pending && values.cluster) throw new Error('--pending: runs on a single node; leave out --cluster');
// Every third callback of the runs but pending at scale carries one of these order keys (ordered.ts); 0: none.
const orderedKeys = values['ordered-keys'] === undefined ? ORDERED_KEYS : Number(values['ordered-keys']);
if (!Number.isInteger(orderedKeys) || orderedKeys < 0) throw new Error(`--ordered-keys: a whole number ≥ 0, got ${values['ordered-keys']}`);

/**
 * Pending at scale: every callback published as fast as the publisher goes, each with a `deliverAt`
 * at least `afterMs` ahead, so that the chaos acts meet them waiting in the delay levels (or the
 * plugin's table). `--callbacks` sets the size with `--pending`.
 */
const PENDING = values.quick
  ? { callbacks: 5_000, due: { afterMs: 30_000, spreadMs: 10_000 }, quiesceMs: 120_000 }
  : { callbacks: 100_000, due: { afterMs: 150_000, spreadMs: 60_000 }, quiesceMs: 600_000 };
const pendingCallbacks = values.pending && values.callbacks ? callbacks : PENDING.callbacks;

const MODES = ['queues', 'plugin'] as const;
// One delay mode only (default: both), e.g. to repeat the plugin-mode run cheaply.
const modes = MODES.filter((mode) => values.mode === undefined || values.mode === mode);
if (modes.length === 0) throw new Error(`--mode: queues or plugin, got ${values.mode}`);

const canary = values.canary ? new Canary() : undefined;
if (values.events !== undefined && values.events !== 'durable')
  throw new Error(`--events: only "durable" is checked, got ${values.events}`);
const durableEvents = values.events === 'durable';
// After the first attempt (at once) and during the second (1 s later): the cancel meets the third.
const cancelAfterMs = values.cancel ? 1_500 : undefined;

const kill = (pool: WorkerPool, atMs: number): ChaosEvent => ({
  atMs,
  kind: 'worker-sigkill',
  label: 'SIGKILL worker',
  run: () => void pool.killRandom(1_000),
});

const stop = (pool: WorkerPool, atMs: number): ChaosEvent => ({
  atMs,
  kind: 'worker-sigterm',
  label: 'SIGTERM worker',
  run: () => void pool.stopRandom(1_000),
});

/** One node (test/support/local-broker.ts): worker kills and stops, broker restarts, connection cuts. */
async function singleNode(scenarios: ScenarioResult[], skipped: Skipped[]): Promise<Summary['broker']> {
  const node = await startChaosNode();
  const info = await inspectBroker(node.url);
  say(`broker: RabbitMQ ${info.version}, node ${node.node}, delayed-message plugin: ${info.hasDelayedPlugin ? 'yes' : 'no'}`);
  const span = PROFILE.spreadMs;
  const [kills, stops, restarts, cuts] = values.quick ? [4, 2, 1, 1] : [12, 4, 2, 3];
  // Plugin mode restarts the broker the way docs/plugin-mode.md tells operators to: before-stop.sh first.
  // Without it, delayed messages that fall due while the node stops are lost inside the plugin.
  const timeline =
    (mode: 'queues' | 'plugin') =>
    ({ pool, names, ledger }: Run): ChaosEvent[] => [
      // Early, before any cut or restart has returned messages: the canary wants callbacks with one copy.
      ...(canary ? [canary.event(node.url, names, ledger, 0.25 * span)] : []),
      ...spaced(kills, 0.15 * span, span).map((at) => kill(pool, at)),
      ...spaced(stops, 0.35 * span, 0.8 * span).map((at) => stop(pool, at)),
      ...spaced(restarts, 0.45 * span, 0.75 * span).map((atMs, i) => ({
        atMs,
        kind: 'broker-restart' as const,
        label: `broker restart #${i + 1}${mode === 'plugin' ? ' (before-stop.sh first)' : ''}`,
        run: () => node.restart({ beforeStop: mode === 'plugin' }),
      })),
      ...spaced(cuts, 0.3 * span, 0.9 * span).map((atMs, i) => ({
        atMs,
        kind: 'connection-cut' as const,
        label: `close_all_connections #${i + 1}`,
        run: () => node.cutConnections(),
      })),
    ];
  // Pending at scale: the acts fall before the first callback is due; the restart waits for the last
  // publish, so that it meets every callback pending.
  const ahead = PENDING.due.afterMs;
  const pendingTimeline =
    (mode: 'queues' | 'plugin') =>
    ({ pool, names, published }: Run): ChaosEvent[] => [
      kill(pool, 0.25 * ahead),
      {
        atMs: 0.4 * ahead,
        kind: 'broker-restart',
        label: `broker restart once every callback is published${mode === 'plugin' ? ' (before-stop.sh first)' : ''}`,
        run: async () => {
          await published;
          const depths = await queueDepths(node.url, names);
          say(
            `  pending before the restart: ${mode === 'queues' ? `${depths?.delay ?? '?'} in the delay levels` : 'in the plugin table'}, ${depths?.work ?? '?'} in the lanes`,
          );
          await node.restart({ beforeStop: mode === 'plugin' });
        },
      },
      kill(pool, 0.75 * ahead),
      { atMs: 0.85 * ahead, kind: 'connection-cut', label: 'close_all_connections', run: () => node.cutConnections() },
    ];
  for (const mode of modes) {
    const kinds = values.pending ? ['pending'] : ['mixed', 'pending'];
    for (const kind of kinds) {
      const title = kind === 'pending' ? `pending at scale [${mode} mode]` : `single node [${mode} mode]`;
      if (mode === 'plugin' && !info.hasDelayedPlugin) {
        skipped.push({ title, reason: NO_PLUGIN });
        say(`\n== ${title}: ${NO_PLUGIN}`);
        continue;
      }
      const common = {
        title,
        mode,
        workerUrls: [node.url, node.url],
        publisherUrl: node.url,
        inspectUrl: node.url,
        traceIds: canary?.swallowed ?? [],
        logDir: LOGS,
        durableEvents,
        cancelAfterMs,
      };
      const spec: ScenarioSpec =
        kind === 'pending'
          ? {
              ...common,
              callbacks: pendingCallbacks,
              spreadMs: 0,
              due: PENDING.due,
              quiesceTimeoutMs: PENDING.quiesceMs,
              timeline: pendingTimeline(mode),
            }
          : { ...common, callbacks, spreadMs: span, quiesceTimeoutMs: PROFILE.quiesceMs, timeline: timeline(mode), orderedKeys };
      scenarios.push(await runScenario(spec, say));
    }
  }
  return { version: info.version, delayedPlugin: info.hasDelayedPlugin, nodes: 1 };
}

// The plugin keeps delayed messages in a Mnesia table local to the node the retry was published on,
// not replicated, and P.due (classic) lives on one node: a node that goes away takes both with it.
const PLUGIN_CLUSTER_LOSS = 'plugin mode keeps delayed messages on one node (by design of the plugin)';

/**
 * Three nodes; one worker per node; node 2 is stopped mid-run and brought back (`--node-loss`: killed
 * and not brought back during the run, as if the machine were gone). Queues mode must lose nothing;
 * plugin mode runs where the broker has the plugin, and its losses are measured, not judged.
 */
async function cluster(scenarios: ScenarioResult[], skipped: Skipped[]): Promise<Summary['broker']> {
  say('starting a 3-node cluster…');
  const c = await startCluster(3);
  const [n1, n2, n3] = c.nodes as [(typeof c.nodes)[0], (typeof c.nodes)[0], (typeof c.nodes)[0]];
  const info = await inspectBroker(n1.url);
  say(`cluster: ${c.nodes.map((n) => `${n.name} (${new URL(n.url).host})`).join(', ')}; RabbitMQ ${info.version}`);
  const lose = values['node-loss'];
  const how = values['node-kill'] || lose ? 'kill' : 'stop_app';
  const span = PROFILE.spreadMs;
  const timeline =
    (mode: 'queues' | 'plugin') =>
    ({ pool, names, ledger }: Run): ChaosEvent[] => [
      ...(canary && mode === 'queues' ? [canary.event(n1.url, names, ledger, 0.5 * span)] : []),
      kill(pool, 0.15 * span),
      {
        atMs: 0.3 * span,
        kind: 'node-stop',
        label: `${how === 'kill' ? 'SIGKILL' : 'stop_app'} node 2 (${n2.name})${lose ? ', for good' : ''}`,
        run: () => c.stopNode(1, how),
      },
      ...(lose ? [] : [{ atMs: 0.65 * span, kind: 'node-start' as const, label: `bring node 2 back`, run: () => c.startNode(1, how) }]),
      kill(pool, 0.8 * span),
      {
        atMs: 0.9 * span,
        kind: 'connection-cut',
        label: 'close_all_connections via node 3 (cluster-wide)',
        run: () => c.cutConnections(2),
      },
    ];
  for (const mode of modes) {
    const title = `3-node cluster [${mode} mode]${lose ? ' (node lost)' : how === 'kill' ? ' (node killed)' : ''}`;
    const skip = mode === 'plugin' && (!info.hasDelayedPlugin ? NO_PLUGIN : canary ? 'skipped: the canary runs in queues mode' : undefined);
    if (skip) {
      skipped.push({ title, reason: skip });
      say(`\n== ${title}: ${skip}`);
      continue;
    }
    const spec: ScenarioSpec = {
      title,
      mode,
      callbacks,
      spreadMs: span,
      quiesceTimeoutMs: PROFILE.quiesceMs,
      workerUrls: [n1.url, n2.url, n3.url],
      publisherUrl: n1.url,
      inspectUrl: n1.url,
      timeline: timeline(mode),
      traceIds: canary?.swallowed ?? [],
      logDir: LOGS,
      durableEvents,
      cancelAfterMs,
      orderedKeys,
    };
    scenarios.push(await runScenario(mode === 'plugin' ? { ...spec, lossExpected: PLUGIN_CLUSTER_LOSS } : spec, say));
    if (lose) await c.startNode(1, how); // the next scenario starts on three nodes again
  }
  return { version: info.version, delayedPlugin: info.hasDelayedPlugin, nodes: 3 };
}

installCleanupHandlers();
rmSync(LOGS, { recursive: true, force: true });
mkdirSync(LOGS, { recursive: true });
const started = Date.now();
const scenarios: ScenarioResult[] = [];
const skipped: Skipped[] = [];
let exitCode = 1;
try {
  const broker = onContainers
    ? await containerCluster(scenarios, {
        quick: values.quick,
        faults,
        callbacks: values.callbacks ? callbacks : undefined,
        orderedKeys,
        logDir: LOGS,
        say,
      })
    : values.cluster
      ? await cluster(scenarios, skipped)
      : await singleNode(scenarios, skipped);
  const judged = scenarios.filter((s) => !s.lossExpected);
  const lost = judged.reduce((sum, s) => sum + s.verdict.lost, 0);
  const lostByDesign = scenarios.reduce((sum, s) => sum + s.verdict.lost, 0) - lost;
  const undelivered = judged.reduce((sum, s) => sum + s.verdict.undelivered.length, 0);
  // Ordered keys: a request before an earlier callback of its key was settled fails the run, like a loss.
  const keysChecked = judged.reduce((sum, s) => sum + (s.verdict.order?.keys ?? 0), 0);
  const inversions = judged.reduce((sum, s) => sum + (s.verdict.order?.inversions ?? 0), 0);
  const eventErrors = durableEvents
    ? judged.reduce((sum, s) => sum + (s.events ? s.events.missingFinal + s.events.falseFinal : 0), 0)
    : undefined;
  const summary: Summary = {
    kind: `${onContainers ? `container cluster (${faults.join(', ')})` : values.cluster ? 'cluster' : 'single-node'}${values.quick ? ' quick' : ''}`,
    startedAt: new Date(started).toISOString(),
    seconds: Math.round((Date.now() - started) / 1000),
    broker,
    scenarios,
    skipped,
    lost,
    undelivered,
    lostByDesign,
    orderedKeys: keysChecked,
    inversions,
    ...(eventErrors === undefined ? {} : { eventErrors }),
    passed:
      judged.length > 0 && (canary ? canary.check(judged).passed : lost === 0) && undelivered === 0 && inversions === 0 && !eventErrors,
    ...(canary ? { canary: { line: canary.check(judged).line, takenAt: canary.takenAt } } : {}),
  };
  for (const scenario of scenarios) say(formatScenario(scenario));
  for (const skip of skipped) say(`\n### ${skip.title}: ${skip.reason}`);
  writeSummary(`${RESULTS}latest.json`, summary);
  if (canary) say(`\n${canary.check(judged).line}`);
  say(
    `\n${summary.passed ? 'PASS' : 'FAIL'}: lost ${lost}, undelivered ${undelivered}, ordered keys: ${keysChecked}, inversions: ${inversions}${eventErrors === undefined ? '' : `, final events missing or false ${eventErrors}`}${lostByDesign ? ` (and ${lostByDesign} by design, see above)` : ''} in ${summary.seconds} s; summary in chaos/results/latest.json, worker logs in chaos/results/logs/`,
  );
  // The scenarios' own lines may be far above the end of a long log: the undelivered are named here too.
  for (const scenario of judged)
    for (const miss of scenario.verdict.undelivered.slice(0, 5))
      say(
        `  undelivered in ${scenario.title}: ${miss.id}: ${miss.got}${miss.reachedSuccess ? '' : ' (the attempt scripted to succeed was never sent)'}`,
      );
  for (const scenario of judged)
    for (const x of scenario.verdict.order?.examples ?? [])
      say(
        `  inversion in ${scenario.title}: ${x.key}, callback ${x.seq} requested before callback ${x.before} was settled (its requests are listed above)`,
      );
  exitCode = summary.passed ? 0 : 1;
} finally {
  say('cleaning up (workers, receiver, broker nodes, data dirs)…');
  await runCleanup();
}
process.exit(exitCode);
