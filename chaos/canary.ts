import type { TopologyNames } from '../src/topology/topology-names.js';
import type { ChaosEvent } from './driver.js';
import { fateOfId } from './fates.js';
import type { Ledger } from './ledger.js';
import { swallow } from './queues.js';
import type { ScenarioResult } from './scenario.js';

/** Callbacks the canary makes disappear on purpose. */
export const CANARY_COUNT = 5;

/**
 * `--canary`, the harness's self-test: mid-run a rogue consumer acks a few never-attempted `ok`
 * callbacks without delivering them, as a buggy worker would. The run passes only if the verdict
 * reports exactly those as lost — proof that a real loss would not go unnoticed.
 */
export class Canary {
  readonly swallowed: string[] = [];
  /** When each was swallowed (ms since epoch), to read its trace against. */
  readonly takenAt: Record<string, number> = {};

  /** The chaos act; `url` must reach the node holding `names.workQueue`. */
  event(url: string, names: TopologyNames, ledger: Ledger, atMs: number): ChaosEvent {
    // Never-seen ids only: one the receiver already got would count as delivered, whatever we do to it.
    const accept = (id: string): boolean => fateOfId(id) === 'ok' && !ledger.byId.has(id);
    return {
      atMs,
      kind: 'canary',
      label: `canary: a rogue consumer acks ${CANARY_COUNT} fresh messages undelivered`,
      run: async () =>
        void (await swallow(url, names.workQueue, CANARY_COUNT, accept, (id) => {
          this.swallowed.push(id);
          this.takenAt[id] = Date.now();
        })),
    };
  }

  /**
   * Whether the verdict found exactly the swallowed callbacks lost. A swallowed message may still have
   * had a second copy (say, a deferral copy whose original a kill sent back); such an id reappears in
   * the ledger and is rightly not lost, so it is left out of the expectation.
   */
  check(results: ScenarioResult[]): { passed: boolean; line: string } {
    const mustBeLost = this.swallowed.filter((id) =>
      results.some((r) => r.traces[id] && r.traces[id].requests.length === 0 && r.traces[id].dead.length === 0),
    );
    const lost = results.reduce((sum, r) => sum + r.verdict.lost, 0);
    const found = mustBeLost.filter((id) => results.some((r) => r.verdict.lostIds.includes(id)));
    const passed = mustBeLost.length > 0 && found.length === mustBeLost.length && lost === mustBeLost.length;
    const line =
      `canary: swallowed ${this.swallowed.length} (${this.swallowed.length - mustBeLost.length} had a second copy); ` +
      `expected lost ${mustBeLost.length}, reported lost ${lost}, of them swallowed ${found.length} → ${passed ? 'the ledger sees a loss' : 'HARNESS BROKEN'}`;
    return { passed, line };
  }
}
