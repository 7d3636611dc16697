import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { ROOT } from './processes.js';

/** The bench's child processes as plain JavaScript, the way the relay ships (`npm run build`). */
export interface BenchBuild {
  dir: string;
  /** consumer/main.js of the compiled src/. */
  relayMain: string;
  /** ingest/main.js of the compiled src/. */
  ingestMain: string;
  /** A bench script (bench/NAME.ts) transpiled to JavaScript. */
  script(name: BenchScript): string;
}

/** The child scripts, and the bench files they import, transpiled next to them. */
const SCRIPTS = ['minimal-consumer', 'raw-consumer', 'stats', 'scenarios/ingest-floor'] as const;
export type BenchScript = Exclude<(typeof SCRIPTS)[number], 'stats'>;
let build: BenchBuild | undefined;

/**
 * Compiles src/ with tsc (source maps on) into a temporary directory, once per bench run, and
 * transpiles the ceiling consumers next to it. Every consumer runs as plain `node FILE.js`, so no
 * run pays for a TypeScript loader in memory, and a CPU profile maps back to src/ lines through the
 * .js.map files.
 */
export function benchBuild(): BenchBuild {
  if (build) return build;
  const dir = mkdtempSync(join(tmpdir(), 'relay-bench-build-'));
  const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
  const result = spawnSync(
    process.execPath,
    [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(dir, 'dist'), '--declaration', 'false', '--sourceMap', 'true'],
    {
      cwd: ROOT,
      encoding: 'utf8',
    },
  );
  if (result.status !== 0) throw new Error(`tsc failed:\n${result.stdout}${result.stderr}`);
  mkdirSync(join(dir, 'bench/scenarios'), { recursive: true });
  for (const name of SCRIPTS) {
    const source = readFileSync(join(ROOT, 'bench', `${name}.ts`), 'utf8');
    const { outputText } = ts.transpileModule(source, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    });
    // A script that uses the library imports src/; here that is the compiled dist/.
    writeFileSync(join(dir, 'bench', `${name}.js`), outputText.replace(/(from '(?:\.\.\/)+)src\//g, '$1dist/'));
  }
  // Bare imports resolve through node_modules next to the build; the package is ESM.
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
  build = {
    dir,
    relayMain: join(dir, 'dist/consumer/main.js'),
    ingestMain: join(dir, 'dist/ingest/main.js'),
    script: (name) => join(dir, 'bench', `${name}.js`),
  };
  return build;
}

/** Removes the build, if one was made. */
export function removeBenchBuild(): void {
  if (build) rmSync(build.dir, { recursive: true, force: true });
  build = undefined;
}
