/**
 * Cleanup that runs however the run ends: normally, on an exception, or on Ctrl-C. Brokers are
 * separate process groups and would outlive us, so every resource registers how to undo it.
 */

interface Step {
  name: string;
  /** The orderly undo (stop a node, remove its data dir). */
  run: () => Promise<void>;
  /** A synchronous last resort for `process.on('exit')`, where nothing can be awaited. */
  lastResort?: () => void;
}

const steps: Step[] = [];
let running: Promise<void> | undefined;

/** Registers an undo step; steps run in reverse order of registration (last started, first stopped). */
export function onCleanup(name: string, run: () => Promise<void>, lastResort?: () => void): void {
  steps.push({ name, run, ...(lastResort ? { lastResort } : {}) });
}

/** Runs every registered step once, even if some fail; safe to call more than once. */
export function runCleanup(): Promise<void> {
  running ??= (async () => {
    while (steps.length > 0) {
      const step = steps.pop()!;
      try {
        await step.run();
      } catch (error) {
        process.stderr.write(`cleanup: ${step.name} failed (${(error as Error).message}); forcing it\n`);
        try {
          step.lastResort?.();
        } catch {
          // Nothing more to try: report below that something may be left behind.
          process.stderr.write(`cleanup: ${step.name} may have left something behind\n`);
        }
      }
    }
  })();
  return running;
}

/** Makes Ctrl-C, SIGTERM, crashes and a plain `process.exit` all go through the cleanup. */
export function installCleanupHandlers(): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\n${signal}: cleaning up…\n`);
      void runCleanup().finally(() => process.exit(130));
    });
  }
  const crash = (error: unknown): void => {
    process.stderr.write(`chaos: crashed: ${(error as Error)?.stack ?? String(error)}\n`);
    void runCleanup().finally(() => process.exit(1));
  };
  process.on('uncaughtException', crash);
  process.on('unhandledRejection', crash);
  // Steps still registered here were never run (exit without cleanup): force them synchronously.
  process.on('exit', () => {
    for (const step of steps.reverse()) {
      try {
        step.lastResort?.();
      } catch {
        // Best effort while exiting.
      }
    }
  });
}
