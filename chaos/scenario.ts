import { randomBytes } from 'node:crypto';
import { loadConfig } from '../src/config/load-config.js';
import { createLogger } from '../src/logger.js';
import { declareOnce } from '../src/topology/connect-topology.js';
import { deleteTopologyAt } from '../src/topology/teardown.js';
import { topologyNames, type TopologyNames } from '../src/topology/topology-names.js';
import { onCleanup } from './cleanup.js';
import { runChaos, type ChaosEvent, type ChaosLogEntry } from './driver.js';
import { bindEventsQueue, drainEvents, judgeEvents, type EventsVerdict } from './event-ledger.js';
import { startLedger, type Attempt, type Ledger } from './ledger.js';
import { dueAt, hasDeliverAt, startLoad, type DueSchedule } from './load.js';
import { progress, waitQuiescent, type Quiescence } from './quiesce.js';
import { drainDead, queueDepths, type DeadEntry, type Depths } from './queues.js';
import { idOf } from './fates.js';
import { faultWindows, type FaultWindow } from './fault-window.js';
import { judge, type Verdict } from './verdict.js';
import { startWorkerPool, type PoolStats, type WorkerPool } from './worker-pool.js';

/** The relay settings under chaos: a short schedule so that whole retry histories fit in minutes. */
export const WORKER_ENV = {
  QUEUE_TYPE: 'quorum',
  TARGET_ALLOW: '127.0.0.0/8', // the chaos receivers listen on loopback
  RETRY_SCHEDULE: '1s,2s',
  MAX_ATTEMPTS: '3',
  RETRY_JITTER: '0.1',
  HTTP_TIMEOUT: '1s',
  DRAIN_TIMEOUT: '3s',
  PREFETCH: '100',
  SLOW_THRESHOLD: '700ms',
  QUIET_PERIOD: '2s',
  METRICS_PORT: '0',
  LOG_LEVEL: 'info',
};

export interface ScenarioSpec {
  title: string;
  mode: 'queues' | 'plugin';
  callbacks: number;
  spreadMs: number;
  quiesceTimeoutMs: number;
  /** One worker per URL (a cluster run points them at different nodes). */
  workerUrls: string[];
  publisherUrl: string;
  /** Where queue depths are read and P.dead is drained: a node that stays up. */
  inspectUrl: string;
  /** The chaos acts, built once the worker pool, queue names and ledger exist (acts use them); `published` resolves once every publish is confirmed or given up. */
  timeline: (run: { pool: WorkerPool; names: TopologyNames; ledger: Ledger; published: Promise<unknown> }) => ChaosEvent[];
  /** Pending at scale: every callback is published with a `deliverAt` (see DueSchedule), so the chaos meets them waiting in the delay path. */
  due?: DueSchedule;
  logDir: string;
  /** Ids whose full history goes into the result besides the lost ones (e.g. the canary's). */
  traceIds: string[];
  /** Set where the set-up loses callbacks by design: the run measures the loss instead of failing on it. */
  lossExpected?: string;
  /** EVENTS=durable: the run also checks that a status table fed by P.events misses no final outcome. */
  durableEvents?: boolean;
  /** `--cancel`: every `always-fail` callback is cancelled this long after its publish, during its retries. */
  cancelAfterMs?: number;
  /** Ordered keys (ordered.ts): every third callback carries an `orderKey`, one of this many, and each key's order is checked. With `due`, they have no `deliverAt` (load.ts publishAt). */
  orderedKeys?: number;
  /** Read once the topology is declared and the workers consume, before the first publish (e.g. where the quorum queue leaders are). */
  onTopology?: (names: TopologyNames) => Promise<Record<string, number>>;
}

/** Everything the run saw of one callback, for a post-mortem. */
export interface Trace {
  requests: Attempt[];
  dead: DeadEntry[];
}

export interface ScenarioResult {
  title: string;
  mode: string;
  prefix: string;
  seconds: number;
  publish: { confirmed: number; republished: number; unconfirmed: number; errors: Record<string, number>; cancelled: number };
  chaos: ChaosLogEntry[];
  workers: Omit<PoolStats, 'unexpectedExits'> & { unexpectedExits: number };
  quiescence: Quiescence;
  /** Ready messages left in each queue group after the workers stopped (their unacked ones returned). */
  leftInQueues: Depths | undefined;
  verdict: Verdict;
  /** Histories of the lost ids and of `traceIds` (at most 20). */
  traces: Record<string, Trace>;
  /** Why losses here are by design (then they do not fail the run). */
  lossExpected?: string;
  /** With `durableEvents`: what the events said against what happened. */
  events?: EventsVerdict;
  /** With `due`: how late first attempts reached the receiver after their `deliverAt`, in ms (negative: early); ordered callbacks have none. */
  lateness?: Lateness;
  /** With `due` and node faults (container cluster): the callbacks due during each fault, and the delivery rate. */
  faults?: FaultWindow[];
  /** Quorum queues per leader node before the first publish (container cluster). */
  leaders?: Record<string, number>;
}

export interface Lateness {
  firstAttempts: number;
  p50: number;
  p99: number;
  max: number;
  /** First attempts that arrived more than 50 ms before their due time (clock and timer slack). */
  early: number;
}

/** First-attempt lateness of a run whose callbacks were published with `due` (those with a `deliverAt`: not the ordered ones). */
function latenessOf(run: string, callbacks: number, due: DueSchedule, startedAt: number, ledger: Ledger, orderedKeys?: number): Lateness {
  const late: number[] = [];
  for (let n = 0; n < callbacks; n += 1) {
    if (!hasDeliverAt(n, orderedKeys)) continue;
    const first = ledger.byId.get(idOf(run, n))?.find((attempt) => attempt.attempt === 1);
    if (first) late.push(first.at - dueAt(due, startedAt, n, callbacks));
  }
  late.sort((a, b) => a - b);
  const at = (p: number): number => late[Math.min(late.length - 1, Math.max(0, Math.ceil((p / 100) * late.length) - 1))] ?? Number.NaN;
  return {
    firstAttempts: late.length,
    p50: at(50),
    p99: at(99),
    max: late.at(-1) ?? Number.NaN,
    early: late.filter((ms) => ms < -50).length,
  };
}

/** One ledger run: workers + ledger receiver + paced publisher + chaos, then quiescence and the verdict. */
export async function runScenario(spec: ScenarioSpec, say: (line: string) => void): Promise<ScenarioResult> {
  const run = randomBytes(3).toString('hex');
  const prefix = `chaos-${run}`;
  const names = topologyNames(prefix);
  const env = { ...WORKER_ENV, TOPOLOGY_PREFIX: prefix, DELAY_MODE: spec.mode, ...(spec.durableEvents && { EVENTS: 'durable' }) };
  const config = loadConfig({ ...env, AMQP_URL: spec.workerUrls[0]! }); // fails fast on a bad setting
  // The topology first, as an operator's admin step declares it (npm run topology): neither the
  // publisher nor, where a role may not declare, the workers are relied on for it.
  await declareOnce(config, createLogger('error', 'chaos-topology'), 120_000);
  const ledger = await startLedger();
  onCleanup('ledger receiver', () => ledger.close());
  const pool = startWorkerPool(spec.workerUrls, env, spec.logDir);
  onCleanup(
    'workers',
    () => pool.stop(5_000),
    () => pool.killAllNow(),
  );
  const ordered = spec.orderedKeys ? `, every third with one of ${spec.orderedKeys} order keys` : '';
  say(`\n== ${spec.title}: ${spec.callbacks} callbacks${ordered}, ${spec.workerUrls.length} workers, prefix ${prefix}`);
  await pool.waitConsuming(90_000);
  const leaders = await spec.onTopology?.(names).catch((error: Error) => void say(`  warning: leaders not read: ${error.message}`));
  if (leaders)
    say(
      `  quorum queue leaders: ${Object.entries(leaders)
        .map(([node, n]) => `${node} ${n}`)
        .join(', ')}`,
    );
  // Bound before the first publish, so every event of the run is kept (the workers declared P.events).
  if (spec.durableEvents) await bindEventsQueue(spec.inspectUrl, names);

  const startedAt = Date.now();
  const load = startLoad({
    amqpUrl: spec.publisherUrl,
    prefix,
    mode: spec.mode,
    run,
    callbacks: spec.callbacks,
    spreadMs: spec.spreadMs,
    giveUpMs: 120_000,
    ledger,
    cancelAfterMs: spec.cancelAfterMs,
    due: spec.due,
    orderedKeys: spec.orderedKeys,
  });
  const stopProgress = progress(spec.inspectUrl, names, ledger, () => load.stats.confirmed, say);
  const [stats, chaos] = await Promise.all([
    load.done,
    runChaos(spec.timeline({ pool, names, ledger, published: load.done }), startedAt, say),
  ]);
  say(`  publishing done: ${stats.confirmed} confirmed, ${stats.republished} republished, ${stats.unconfirmed.length} unconfirmed`);
  // A worker killed by the last act may still be starting: judge the relay at full strength.
  await pool.waitConsuming(90_000).catch((error: Error) => say(`  warning: ${error.message}`));
  // Callbacks still pending in the plugin's table are in no queue: not quiescent before the last is due.
  const lastDue = spec.due ? load.startedAt + spec.due.afterMs + spec.due.spreadMs : 0;
  const quiescence = await waitQuiescent(spec.inspectUrl, names, ledger, 5_000, spec.quiesceTimeoutMs, lastDue);
  stopProgress();
  say(`  ${quiescence.quiescent ? 'quiescent' : 'NOT quiescent'} after ${quiescence.waitedS} s more`);
  await pool.stop(10_000);
  const leftInQueues = await queueDepths(spec.inspectUrl, names);
  const dead = await drainDead(spec.inspectUrl, names);
  const events = spec.durableEvents
    ? judgeEvents(run, spec.callbacks, ledger.byId, dead, await drainEvents(spec.inspectUrl, names))
    : undefined;
  await ledger.close();
  // The same teardown as the tests and the bench: a run against a node that is kept leaves nothing behind.
  await deleteTopologyAt(spec.inspectUrl, names).catch((error: Error) => say(`  warning: topology teardown failed: ${error.message}`));
  const verdict = judge({
    run,
    callbacks: spec.callbacks,
    byId: ledger.byId,
    dead,
    republishedIds: stats.republishedIds,
    unconfirmed: stats.unconfirmed,
    maxAttempts: config.maxAttempts,
    schedule: config.retrySchedule,
    jitter: config.retryJitter,
    mode: spec.mode,
    cancelled: stats.cancelled,
    orderedKeys: spec.orderedKeys,
    cancelTicks: stats.cancelTicks,
  });
  const { unexpectedExits, ...workerStats } = pool.stats;
  for (const exit of unexpectedExits)
    say(`  worker ${exit.worker} exited unexpectedly (code ${exit.code}, signal ${exit.signal}); respawned`);
  return {
    title: spec.title,
    mode: spec.mode,
    prefix,
    seconds: Math.round((Date.now() - startedAt) / 1000),
    publish: {
      confirmed: stats.confirmed,
      republished: stats.republished,
      unconfirmed: stats.unconfirmed.length,
      errors: stats.errors,
      cancelled: stats.cancelled.size,
    },
    chaos,
    workers: { ...workerStats, unexpectedExits: unexpectedExits.length },
    quiescence,
    leftInQueues,
    verdict,
    ...(spec.lossExpected ? { lossExpected: spec.lossExpected } : {}),
    ...(events ? { events } : {}),
    ...(spec.due ? { lateness: latenessOf(run, spec.callbacks, spec.due, load.startedAt, ledger, spec.orderedKeys) } : {}),
    ...(spec.due && chaos.some((act) => act.kind === 'node-fault')
      ? { faults: faultWindows(chaos, run, spec.callbacks, spec.due, load.startedAt, ledger, spec.orderedKeys) }
      : {}),
    ...(leaders ? { leaders } : {}),
    traces: Object.fromEntries(
      [...new Set([...verdict.lostIds, ...spec.traceIds])]
        .slice(0, 20)
        .map((id) => [id, { requests: ledger.byId.get(id) ?? [], dead: dead.filter((entry) => entry.id === id) }]),
    ),
  };
}
