import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { RelayFixture } from './relay.js';
import { configEnv } from './worker-process.js';

const run = promisify(execFile);

/** Runs `callback-relay …` as its own process, like an operator would. */
export async function cli(relay: RelayFixture, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const options = { env: { ...process.env, ...configEnv(relay.config), LOG_LEVEL: 'warn' } };
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], options);
    return { code: 0, stdout, stderr };
  } catch (error) {
    return error as { code: number; stdout: string; stderr: string };
  }
}
