import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem, type as osType, release } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { ScenarioResult, Table } from './context.js';
import { renderChart } from './chart.js';

export const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));

export interface BenchReport {
  startedAt: string;
  finishedAt: string;
  quick: boolean;
  machine: Record<string, unknown>;
  scenarios: Record<string, ScenarioResult & { seconds: number; error?: string }>;
}

export function machineInfo(broker: { version: string; source: string; hasPlugin: boolean }): Record<string, unknown> {
  const cpuList = cpus();
  return {
    cpus: cpuList.length,
    cpuModel: cpuList[0]?.model ?? 'unknown',
    memoryGb: Math.round(totalmem() / 2 ** 30),
    os: `${osType()} ${release()}`,
    node: process.version,
    rabbitmq: broker.version,
    brokerSource: broker.source,
    delayedMessagePlugin: broker.hasPlugin,
  };
}

export function markdownTable(table: Table): string {
  const line = (cells: string[]): string => `| ${cells.join(' | ')} |`;
  return [`#### ${table.title}`, '', line(table.headers), line(table.headers.map(() => '---')), ...table.rows.map(line), ''].join('\n');
}

export function markdownScenario(name: string, result: ScenarioResult & { error?: string }): string {
  const parts = [`### ${name}`, ''];
  if (result.error) parts.push(`**failed:** ${result.error}`, '');
  for (const table of result.tables) parts.push(markdownTable(table));
  for (const note of result.notes) parts.push(`- ${note}`);
  return `${parts.join('\n')}\n`;
}

/**
 * Writes `results/<timestamp>.json`, plus `results/latest.json` and `results/latest.svg` (the
 * newest full run, kept out of git like every run file) when `complete`: a run of some scenarios does not replace the full results. Returns the paths.
 */
export function writeReport(report: BenchReport, complete: boolean): string[] {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const stamp = report.startedAt.replace(/[:.]/g, '-');
  const json = `${JSON.stringify(report, null, 2)}\n`;
  const stamped = `${RESULTS_DIR}${stamp}.json`;
  writeFileSync(stamped, json);
  if (!complete) return [stamped];
  writeFileSync(`${RESULTS_DIR}latest.json`, json);
  writeFileSync(`${RESULTS_DIR}latest.svg`, renderChart(report));
  return [stamped, `${RESULTS_DIR}latest.json`, `${RESULTS_DIR}latest.svg`];
}
