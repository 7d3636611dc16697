/** One scheduled act of chaos. `run` resolves once the act is complete (a restarted broker is back up). */
export interface ChaosEvent {
  /** ms after the start of publishing. */
  atMs: number;
  kind: 'worker-sigkill' | 'worker-sigterm' | 'broker-restart' | 'connection-cut' | 'node-stop' | 'node-start' | 'node-fault' | 'canary';
  label: string;
  run: () => Promise<void> | void;
}

export interface ChaosLogEntry {
  kind: ChaosEvent['kind'];
  label: string;
  /** Seconds after the start, when the act began and when it was complete. */
  startedS: number;
  tookS: number;
  /** Set when the act itself failed (e.g. rabbitmqctl refused); the run goes on. */
  error?: string;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Plays the timeline in order against the running relay, one act at a time: a broker restart takes
 * seconds, and acts that overlapped it would test the harness rather than the relay.
 */
export async function runChaos(events: ChaosEvent[], startedAt: number, say: (line: string) => void): Promise<ChaosLogEntry[]> {
  const log: ChaosLogEntry[] = [];
  for (const event of [...events].sort((a, b) => a.atMs - b.atMs)) {
    const wait = startedAt + event.atMs - Date.now();
    if (wait > 0) await sleep(wait);
    const began = Date.now();
    const entry: ChaosLogEntry = { kind: event.kind, label: event.label, startedS: round((began - startedAt) / 1000), tookS: 0 };
    try {
      await event.run();
    } catch (error) {
      entry.error = (error as Error).message.split('\n')[0];
    }
    entry.tookS = round((Date.now() - began) / 1000);
    say(
      `  t=${entry.startedS.toFixed(1).padStart(6)}s  ${event.label}${entry.error ? `  FAILED: ${entry.error}` : ` (${entry.tookS.toFixed(1)} s)`}`,
    );
    log.push(entry);
  }
  return log;
}

const round = (n: number): number => Math.round(n * 10) / 10;

/** Evenly spaced times from `fromMs` to `toMs` (inclusive), `count` of them. */
export function spaced(count: number, fromMs: number, toMs: number): number[] {
  if (count <= 1) return [fromMs];
  return Array.from({ length: count }, (_, i) => Math.round(fromMs + ((toMs - fromMs) * i) / (count - 1)));
}
