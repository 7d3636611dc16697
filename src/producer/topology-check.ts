import type { Channel } from 'amqplib';
import { RelayError } from '../errors.js';
import { exchangeExists } from '../topology/connect-topology.js';
import type { DelayMode } from '../topology/delay-levels.js';
import type { TopologyNames } from '../topology/topology-names.js';

/** What a publisher checks: the exchanges it publishes to in its delay mode. */
export const publishedExchanges = (names: TopologyNames, mode: DelayMode): string[] =>
  mode === 'queues' ? [names.exchange, names.delayExchange] : [names.exchange];

/** CR_ERR_TOPOLOGY_MISSING for exchange `missing`: names the step that declares the topology. */
export function topologyMissing(missing: string, prefix: string): RelayError {
  return new RelayError(
    'CR_ERR_TOPOLOGY_MISSING',
    `exchange "${missing}" does not exist: the topology of prefix "${prefix}" is not declared. Publishers do not declare it; ` +
      'run `npx callback-relay topology` (`npm run topology`) with an account that may (the admin account), or start a worker; nothing was published',
  );
}

/**
 * A publisher's check that the topology exists, by passive declares (they need no permission: a
 * producer's account has no configure right, see topology/accounts.ts). Declaring is the workers' and
 * the admin step's job. Once the check passed it holds until `forget()` (the connection or channel
 * was lost, or a publish came back unroutable); checks asked for at once share one run.
 */
export class TopologyCheck {
  private passed = false;
  private running: { promise: Promise<void>; abandon: (error: Error) => void } | undefined;

  constructor(
    private readonly names: TopologyNames,
    private readonly mode: DelayMode,
  ) {}

  get isPassed(): boolean {
    return this.passed;
  }

  forget(): void {
    this.passed = false;
    // A check under way on the lost connection may never be answered: its waiters go on to the next one.
    this.running?.abandon(new Error('the connection was lost while the topology was checked'));
    this.running = undefined;
  }

  /** Resolves once the exchanges exist; rejects with CR_ERR_TOPOLOGY_MISSING, the broker's error, or a plain Error when forgotten meanwhile. */
  run(connection: { createChannel(): Promise<Channel> }): Promise<void> {
    if (this.passed) return Promise.resolve();
    if (this.running) return this.running.promise;
    let abandon: (error: Error) => void = () => {};
    const abandoned = new Promise<never>((_, reject) => (abandon = reject));
    const work = (async () => {
      for (const name of publishedExchanges(this.names, this.mode)) {
        if (!(await exchangeExists(connection, name))) throw topologyMissing(name, this.names.exchange);
      }
    })();
    const entry = {
      abandon,
      promise: Promise.race([work, abandoned])
        .then(() => {
          // Only a check of the current connection counts: one forgotten meanwhile proves nothing.
          if (this.running === entry) this.passed = true;
        })
        .finally(() => {
          if (this.running === entry) this.running = undefined;
        }),
    };
    this.running = entry;
    return entry.promise;
  }
}
