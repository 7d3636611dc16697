import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** One worker slot: the process in it is replaced whenever it is killed or dies. */
interface Slot {
  index: number;
  amqpUrl: string;
  child: ChildProcess | undefined;
  /** Set just before we kill it ourselves, so its exit is not counted as unexpected. */
  killedByUs: boolean;
  log: WriteStream;
  consuming: boolean;
}

export interface PoolStats {
  spawned: number;
  sigkills: number;
  /** SIGTERMs (a graceful stop, as an orchestrator's rolling restart sends). */
  sigterms: number;
  /** Exits nobody asked for (a crash, or a start that gave up): a finding in itself. */
  unexpectedExits: { worker: number; code: number | null; signal: string | null }[];
  /** `disconnected from the broker` lines the workers logged. */
  disconnects: number;
}

export interface WorkerPool {
  stats: PoolStats;
  /** Resolves once every slot's worker logged `consuming`, or rejects after `timeoutMs`. */
  waitConsuming(timeoutMs: number): Promise<void>;
  /** SIGKILLs the worker of a random slot and respawns it after `respawnMs`; returns the slot. */
  killRandom(respawnMs: number): number;
  /** SIGTERMs the worker of a random slot (it drains and exits) and respawns it `respawnMs` after its exit; returns the slot. */
  stopRandom(respawnMs: number): number;
  /** Points a slot at another broker URL from its next (re)spawn on. */
  repoint(index: number, amqpUrl: string): void;
  /** SIGTERM (graceful drain), then SIGKILL whatever is left after `graceMs`. */
  stop(graceMs: number): Promise<void>;
  /** Last resort for a dying orchestrator: synchronous, no waiting. */
  killAllNow(): void;
}

/**
 * Worker child processes, started exactly as a container would run one (`src/consumer/main.ts`, here
 * through tsx), each with its own AMQP_URL. Logs go to `logDir/worker-N.log` for post-mortems.
 */
export function startWorkerPool(amqpUrls: string[], env: Record<string, string>, logDir: string): WorkerPool {
  const stats: PoolStats = { spawned: 0, sigkills: 0, sigterms: 0, unexpectedExits: [], disconnects: 0 };
  let stopping = false;
  const slots: Slot[] = amqpUrls.map((amqpUrl, index) => ({
    index,
    amqpUrl,
    child: undefined,
    killedByUs: false,
    log: createWriteStream(join(logDir, `worker-${index}.log`), { flags: 'a' }),
    consuming: false,
  }));

  function spawnInto(slot: Slot): void {
    slot.killedByUs = false;
    slot.consuming = false;
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/consumer/main.ts'], {
      cwd: ROOT,
      env: { ...process.env, ...env, AMQP_URL: slot.amqpUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    stats.spawned += 1;
    slot.child = child;
    slot.log.write(`--- spawned pid ${child.pid} on ${slot.amqpUrl} at ${new Date().toISOString()}\n`);
    // Scan line by line: the whole log can grow to megabytes, and only new lines can carry news.
    let partial = '';
    const onData = (chunk: Buffer): void => {
      slot.log.write(chunk);
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (line.includes('"msg":"consuming"')) slot.consuming = true;
        if (line.includes('"msg":"disconnected from the broker')) stats.disconnects += 1;
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code, signal) => {
      slot.log.write(`--- pid ${child.pid} exited code=${code} signal=${signal}\n`);
      if (slot.child === child) slot.child = undefined;
      slot.consuming = false;
      if (slot.killedByUs || stopping) return;
      stats.unexpectedExits.push({ worker: slot.index, code, signal });
      // Keep the pool at strength, as an orchestrator (Kubernetes, compose) would.
      setTimeout(() => !stopping && !slot.child && spawnInto(slot), 1_000);
    });
  }

  for (const slot of slots) spawnInto(slot);

  return {
    stats,
    async waitConsuming(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (!slots.every((slot) => slot.consuming)) {
        if (Date.now() > deadline) throw new Error(`workers not all consuming within ${timeoutMs} ms (see worker-*.log)`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    killRandom(respawnMs) {
      const alive = slots.filter((slot) => slot.child);
      const slot = alive[Math.floor(Math.random() * alive.length)] ?? slots[0]!;
      if (slot.child) {
        slot.killedByUs = true;
        slot.child.kill('SIGKILL');
        stats.sigkills += 1;
      }
      setTimeout(() => !stopping && !slot.child && spawnInto(slot), respawnMs);
      return slot.index;
    },
    stopRandom(respawnMs) {
      const alive = slots.filter((slot) => slot.child);
      const slot = alive[Math.floor(Math.random() * alive.length)] ?? slots[0]!;
      const child = slot.child;
      if (child) {
        slot.killedByUs = true;
        child.once('exit', () => setTimeout(() => !stopping && !slot.child && spawnInto(slot), respawnMs));
        child.kill('SIGTERM');
        stats.sigterms += 1;
      }
      return slot.index;
    },
    repoint(index, amqpUrl) {
      const slot = slots[index];
      if (slot) slot.amqpUrl = amqpUrl;
    },
    async stop(graceMs) {
      stopping = true;
      const exits = slots.map((slot) => {
        const child = slot.child;
        if (!child || child.exitCode !== null) return Promise.resolve();
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        return exited.finally(() => clearTimeout(timer));
      });
      await Promise.all(exits);
      await Promise.all(slots.map((slot) => new Promise((resolve) => slot.log.end(resolve))));
    },
    killAllNow() {
      stopping = true;
      for (const slot of slots) slot.child?.kill('SIGKILL');
    },
  };
}
