import { spawnSync } from 'node:child_process';
import { mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './processes.js';

/**
 * Compiles src/ with tsc (source maps on) into a temporary directory and returns the path of its
 * consumer/main.js. tsx strips whitespace, so a profile of a tsx-run worker puts every frame of a file
 * on line 1; a profile of this build maps back to src/ lines through the .js.map files.
 */
export function buildForProfiling(): { main: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'relay-profile-build-'));
  const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(dir, 'dist'), '--declaration', 'false', '--sourceMap', 'true'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`tsc failed:\n${result.stdout}${result.stderr}`);
  // Bare imports resolve through node_modules next to the build; the package is ESM.
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
  return { main: join(dir, 'dist/consumer/main.js'), dir };
}
