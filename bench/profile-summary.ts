/**
 * Reads a V8 `.cpuprofile` (node --cpu-prof) and ranks where the time went after start-up: by frame
 * (self time) and by module (self time summed per file or package). Also runnable: `npx tsx bench/profile-summary.ts FILE`.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ROOT } from './processes.js';
import { originalPosition } from './source-map.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileLine {
  name: string;
  ms: number;
  percent: number;
}

const shortPath = (path: string): string => {
  const relative = path.startsWith(ROOT) ? path.slice(ROOT.length) : path;
  return relative.replace(/^.*node_modules\/((?:@[^/]+\/)?[^/]+)\//, 'node_modules/$1/');
};

/** Where a frame's function starts, as `file:line` of the original source when a source map says so. */
const location = (frame: ProfileNode['callFrame']): { file: string; line: number } => {
  const path = frame.url.startsWith('file://') ? fileURLToPath(frame.url) : frame.url;
  const original = path.startsWith('/') ? originalPosition(path, frame.lineNumber, frame.columnNumber) : undefined;
  return original ? { file: shortPath(original.source), line: original.line } : { file: shortPath(path), line: frame.lineNumber + 1 };
};

/** A module: `src/consumer/deliver.ts`, a package (`undici`), `node:…` internals, or a V8 bucket such as `(garbage collector)`. */
const moduleOf = (frame: ProfileNode['callFrame']): string => {
  if (frame.url === '') return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  const short = location(frame).file;
  const pkg = /^node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(short);
  return pkg ? (pkg[1] as string) : short;
};

/** Index of the first sample taken inside a frame of `file`, so start-up (module loading) can be left out. */
function firstSampleIn(profile: CpuProfile, byId: Map<number, ProfileNode>, file: RegExp): number {
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const inside = (id: number | undefined): boolean =>
    id !== undefined && (file.test(byId.get(id)?.callFrame.url ?? '') || inside(parent.get(id)));
  const index = profile.samples.findIndex((id) => inside(id));
  return index === -1 ? 0 : index;
}

/** Self time by frame and by module, counted from the first sample inside `from` (default: the message handler). */
export type ProfileSummary = { totalMs: number; frames: ProfileLine[]; modules: ProfileLine[] };

export function summarizeProfile(file: string, top = 15, from = /consumer\/pipeline\.[jt]s$/): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfMs = new Map<number, number>();
  const start = firstSampleIn(profile, byId, from);
  profile.samples.forEach((id, i) => {
    if (i >= start) selfMs.set(id, (selfMs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  const totalMs = [...selfMs.values()].reduce((a, b) => a + b, 0);
  const frames = new Map<string, number>();
  const modules = new Map<string, number>();
  for (const [id, ms] of selfMs) {
    const frame = (byId.get(id) as ProfileNode).callFrame;
    if (frame.functionName === '(idle)' || frame.functionName === '(program)') continue;
    const at = location(frame);
    const where = frame.url === '' ? '' : ` ${at.file}:${at.line}`;
    const name = `${frame.functionName || '(anonymous)'}${where}`;
    frames.set(name, (frames.get(name) ?? 0) + ms);
    modules.set(moduleOf(frame), (modules.get(moduleOf(frame)) ?? 0) + ms);
  }
  const busyMs = [...frames.values()].reduce((a, b) => a + b, 0);
  const rank = (map: Map<string, number>): ProfileLine[] =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, ms]) => ({ name, ms, percent: (100 * ms) / busyMs }));
  return { totalMs, frames: rank(frames), modules: rank(modules) };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const summary = summarizeProfile(process.argv[2] ?? '', Number(process.argv[3] ?? '25'));
  process.stdout.write(`profile: ${(summary.totalMs / 1000).toFixed(1)} s sampled\n\nself time by frame:\n`);
  for (const line of summary.frames)
    process.stdout.write(`${line.percent.toFixed(1).padStart(5)}%  ${line.ms.toFixed(0).padStart(6)} ms  ${line.name}\n`);
  process.stdout.write('\nself time by module:\n');
  for (const line of summary.modules)
    process.stdout.write(`${line.percent.toFixed(1).padStart(5)}%  ${line.ms.toFixed(0).padStart(6)} ms  ${line.name}\n`);
}
