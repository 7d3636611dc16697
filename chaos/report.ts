import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Fate } from './fates.js';
import { formatFaultWindows } from './fault-window.js';
import type { ScenarioResult } from './scenario.js';
import { emptyTally, type FateRow } from './verdict.js';

/** A scenario that was not run, and why (e.g. plugin mode on a broker without the plugin). */
export interface Skipped {
  title: string;
  reason: string;
}

export interface Summary {
  kind: string;
  startedAt: string;
  seconds: number;
  broker: { version: string; delayedPlugin: boolean; nodes: number };
  scenarios: ScenarioResult[];
  skipped: Skipped[];
  /** `--canary` only: what was swallowed when, and whether exactly that was reported lost. */
  canary?: { line: string; takenAt: Record<string, number> };
  /** The run's hard rule: no callback neither delivered nor parked (over the scenarios that promise it). */
  lost: number;
  /** And none parked whose success was certain by its schedule (a `hang-then-ok` in P.dead, say). */
  undelivered: number;
  /** `--events durable`: callbacks whose final event is missing or false (a status table fed by P.events would be wrong). */
  eventErrors?: number;
  /** Lost where the set-up loses callbacks by design (plugin mode on a cluster that loses a node). */
  lostByDesign: number;
  /** Ordered keys checked, and requests that came before an earlier callback of their key was settled (must be 0). */
  orderedKeys: number;
  inversions: number;
  passed: boolean;
}

const pad = (cells: (string | number)[], widths: number[]): string =>
  cells.map((cell, i) => (i === 0 ? String(cell).padEnd(widths[i]!) : String(cell).padStart(widths[i]!))).join('  ');

/** The human summary: one table per scenario, then the chaos that hit it and what looked odd. */
export function formatScenario(result: ScenarioResult): string {
  const v = result.verdict;
  const widths = [14, 9, 9, 10, 11, 7, 5, 10, 9];
  const lines = [
    `\n### ${result.title} (${result.seconds} s, prefix ${result.prefix})`,
    pad(['fate', 'callbacks', 'delivered', 'dead (ok)', 'UNDELIVERED', 'other', 'lost', 'dup 2xx', 'repeats'], widths),
  ];
  const total = emptyTally();
  for (const [fate, row] of Object.entries(v.perFate) as [Fate, FateRow][]) {
    lines.push(
      pad(
        [
          fate,
          row.callbacks,
          row.delivered,
          row.deadAsExpected,
          row.undelivered,
          row.otherOutcome,
          row.lost,
          row.duplicateDeliveries,
          row.repeatedAttempts,
        ],
        widths,
      ),
    );
    for (const key of Object.keys(total) as (keyof FateRow)[]) total[key] += row[key];
  }
  lines.push(
    pad(
      [
        'total',
        total.callbacks,
        total.delivered,
        total.deadAsExpected,
        total.undelivered,
        total.otherOutcome,
        total.lost,
        total.duplicateDeliveries,
        total.repeatedAttempts,
      ],
      widths,
    ),
  );
  const count = (kind: string): number => result.chaos.filter((event) => event.kind === kind && !event.error).length;
  const failedActs = result.chaos.filter((event) => event.error).length;
  lines.push(
    '',
    `LOST: ${v.lost}${v.lostIds.length ? ` (e.g. ${v.lostIds.slice(0, 5).join(', ')})` : ''}${result.lossExpected ? `; measured, not judged: ${result.lossExpected}` : ''}`,
    `P.dead by reason: ${
      Object.entries(v.dead)
        .map(([reason, n]) => `${reason} ${n}`)
        .join(', ') || 'none'
    }`,
    `duplicates: ${v.duplicates.deliveredTwice} delivered twice (${v.duplicates.afterRepublish} after a producer republish), ` +
      `${v.duplicates.parkedTwice} parked twice, ${v.duplicates.deliveredAndParked} delivered and parked; ${v.repeatedAttempts} repeated attempts; ` +
      `${v.unansweredSuccesses} 2xx answers never sent (worker gone)`,
    `chaos: ${result.workers.sigkills} worker SIGKILLs, ${result.workers.sigterms} SIGTERMs, ${count('broker-restart')} broker restarts, ${count('connection-cut')} connection cuts, ` +
      `${count('node-stop')} node stops / ${count('node-start')} node starts, ${count('node-fault')} node faults${failedActs ? `, ${failedActs} acts FAILED` : ''}`,
    `workers: ${result.workers.spawned} spawned, ${result.workers.disconnects} broker disconnects logged, ${result.workers.unexpectedExits} unexpected exits`,
    `publisher: ${result.publish.confirmed} confirmed, ${result.publish.republished} republished, ${result.publish.unconfirmed} unconfirmed` +
      (result.publish.cancelled
        ? `, ${result.publish.cancelled} cancelled mid-retry (${v.canceled} parked as canceled, the rest ended first)`
        : '') +
      (Object.keys(result.publish.errors).length ? ` (errors: ${JSON.stringify(result.publish.errors)})` : ''),
    `end state: ${result.quiescence.quiescent ? 'quiescent' : 'NOT quiescent'}; left in queues after stop: ` +
      (result.leftInQueues
        ? `work ${result.leftInQueues.work}, ordered ${result.leftInQueues.ordered}, slow ${result.leftInQueues.slow}, delay ${result.leftInQueues.delay}`
        : 'unknown'),
    `UNDELIVERED (2xx certain within MAX_ATTEMPTS, yet parked in P.dead): ${v.undelivered.length}` +
      (v.undelivered.length
        ? ` (${v.undelivered.filter((x) => !x.reachedSuccess).length} never sent the attempt scripted to succeed), e.g. ${v.undelivered
            .slice(0, 3)
            .map((x) => `${x.id}: ${x.got}`)
            .join('; ')}`
        : ''),
    `schedule/attempt violations: ${v.violations.length}${
      v.violations.length
        ? `, e.g. ${v.violations
            .slice(0, 3)
            .map((x) => `${x.id}: ${x.problem}`)
            .join('; ')}`
        : ''
    }`,
    `outcomes other than the fate implies: ${v.otherOutcomes.length}${
      v.otherOutcomes.length
        ? `, e.g. ${v.otherOutcomes
            .slice(0, 3)
            .map((x) => `${x.id}: ${x.got}`)
            .join('; ')}`
        : ''
    }`,
  );
  const o = v.order;
  if (o) {
    lines.push(
      `ordered keys: ${o.keys}, inversions: ${o.inversions}` +
        ` (${o.callbacks} ordered callbacks, ${o.requests} requests; ${o.keysInverted} keys with an inversion; ${o.untimedParks} parks no answer accounts for)`,
    );
    for (const x of o.examples)
      lines.push(
        `  INVERSION ${x.key}: callback ${x.seq} attempt ${x.attempt} requested at #${x.tick}, ` +
          `before callback ${x.before} was settled (${x.settledTick === undefined ? 'never' : `#${x.settledTick}`}); the key's requests:`,
        ...x.log.map((line) => `    ${line}`),
      );
  }
  const l = result.lateness;
  if (l)
    lines.push(
      `first attempts after deliverAt (${l.firstAttempts}): late p50 ${l.p50} ms, p99 ${l.p99} ms, max ${l.max} ms; ${l.early} more than 50 ms early`,
    );
  lines.push(...formatFaultWindows(result.faults ?? []));
  const e = result.events;
  if (e) {
    lines.push(
      `durable events: ${e.events} read (${e.duplicates} repeated message ids); MISSING FINAL: ${e.missingFinal}, FALSE FINAL: ${e.falseFinal}; ` +
        `${e.disagreeing} delivered with only a dead event${
          e.examples.length
            ? `; e.g. ${e.examples
                .slice(0, 3)
                .map((x) => `${x.id}: ${x.problem}`)
                .join('; ')}`
            : ''
        }`,
    );
  }
  return lines.join('\n');
}

/** Writes the JSON summary (examples are capped, so the file stays small even at 50k callbacks). */
export function writeSummary(path: string, summary: Summary): void {
  mkdirSync(dirname(path), { recursive: true });
  const trimmed = {
    ...summary,
    scenarios: summary.scenarios.map((s) => ({
      ...s,
      verdict: {
        ...s.verdict,
        undelivered: s.verdict.undelivered.slice(0, 20),
        otherOutcomes: s.verdict.otherOutcomes.slice(0, 20),
        violations: s.verdict.violations.slice(0, 20),
        undeliveredCount: s.verdict.undelivered.length,
        otherOutcomeCount: s.verdict.otherOutcomes.length,
        violationCount: s.verdict.violations.length,
      },
    })),
  };
  writeFileSync(path, `${JSON.stringify(trimmed, null, 2)}\n`);
}
