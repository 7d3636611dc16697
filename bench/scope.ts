import { freePort } from '../test/support/free-port.js';
import { deleteTopologyAt, randomPrefix } from './topology-cleanup.js';

/**
 * What a scenario (or one run of it) set up, undone in reverse order by `close()`: child processes
 * first, then receivers and connections, then topology prefixes.
 */
export class Scope {
  private readonly undo: Array<() => Promise<unknown>> = [];

  constructor(readonly url: string) {}

  /** A fresh topology prefix, deleted from the broker on close. */
  prefix(kind: string): string {
    const prefix = randomPrefix(kind);
    this.defer(() => deleteTopologyAt(this.url, prefix));
    return prefix;
  }

  defer(step: () => Promise<unknown>): void {
    this.undo.push(step);
  }

  /** Registers `resource`'s close/stop and returns it. */
  add<T extends { close?: () => Promise<unknown>; stop?: () => Promise<unknown> }>(resource: T): T {
    this.defer(() => (resource.stop ?? resource.close)?.call(resource) ?? Promise.resolve());
    return resource;
  }

  async close(): Promise<void> {
    for (const step of this.undo.splice(0).reverse()) {
      await step().catch((error: Error) => process.stderr.write(`cleanup: ${error.message}\n`));
    }
  }
}

/** Runs `body` with a scope that is closed whatever happens. */
export async function withScope<T>(url: string, body: (scope: Scope) => Promise<T>): Promise<T> {
  const scope = new Scope(url);
  try {
    return await body(scope);
  } finally {
    await scope.close();
  }
}

export { freePort };
