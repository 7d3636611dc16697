import type { Agent } from 'undici';
import type { RelayConfig } from '../config/load-config.js';
import type { ControlReader } from '../control/control-reader.js';
import { startFleetPresence, type FleetPresence } from '../control/fleet-presence.js';
import type { TargetLimit } from '../formats/target-limit.js';
import { resolveBrokerEndpoints } from '../http/broker-endpoints.js';
import { createGuardedAgent } from '../http/guarded-agent.js';
import type { TargetIsolation, TargetKey } from '../isolation/target-isolation.js';
import type { Logger } from '../logger.js';
import { applyTopology, connectTopology, type ResolvedTopology } from '../topology/connect-topology.js';
import { orderBucket, orderedRoutingKey, orderedShard, type TopologyNames } from '../topology/topology-names.js';
import type { Job } from './admit.js';
import { applyLimits, followFleet } from './apply-limits.js';
import { OrderedKeys, type OrderedKeysDeps } from './ordered-keys.js';
import type { Lane } from '../reports.js';
import type { WorkerSettings } from './worker-settings.js';

/*
 * The worker's start, step by step (worker.ts start): the topology declared, the HTTP agent, the
 * limits and the fleet's presence, the ordered shards; and how long each step took.
 */

/**
 * Milliseconds each named step of a start took, each counted from the end of the one before; `last`
 * ends the final step and returns them all, once (a reconnect's setup logs no start).
 */
export function startSteps(clock: () => number) {
  let since = clock();
  let taken: Record<string, number> | undefined = {};
  const done = (step: string): void => {
    const now = clock();
    if (taken) taken[step] = now - since;
    since = now;
  };
  return {
    done,
    last(step: string): Record<string, number> | undefined {
      done(step);
      const all = taken;
      taken = undefined;
      return all;
    },
  };
}

/** Connects to the first broker that answers and declares the topology (retried while the broker goes away meanwhile). */
export async function declareAtStart(config: RelayConfig, logger: Logger, signal: AbortSignal): Promise<ResolvedTopology> {
  const topology = await connectTopology(config, logger, signal);
  const applied = await applyTopology(topology.url, topology, {
    signal,
    onRetry: (error) => logger.warn({ err: error.message }, 'the broker went away while the topology was declared; retrying'),
  });
  if (applied.earlierLevels) {
    const { messages, levels } = applied.earlierLevels;
    logger.info(
      { messages, queues: levels.join(', ') },
      'delay levels of an earlier version: unbound from the entry exchange; they drain on their own, delete them once empty (docs/delay-modes.md)',
    );
  }
  return topology;
}

/** The HTTP agent every attempt goes through: the address policy, and the broker's own endpoints never dialled, whatever TARGET_ALLOW says. */
export async function deliveryAgent(amqpUrl: string, settings: WorkerSettings, logger: Logger): Promise<Agent> {
  const broker = await resolveBrokerEndpoints(amqpUrl);
  if (broker.unresolved.length > 0)
    logger.warn({ hosts: broker.unresolved }, 'could not resolve these AMQP_URL hosts: callbacks are not kept from their addresses');
  return createGuardedAgent({ timeoutMs: settings.delivery.timeoutMs, policy: { ...settings.addressPolicy, broker: broker.endpoints } });
}

export interface LimitsAtStart {
  urls: string[];
  names: TopologyNames;
  control: ControlReader;
  targetLimits: ReadonlyMap<string, TargetLimit>;
  targetKey: TargetKey;
  clock: () => number;
  logger: Logger;
  /** A limit, a back-off or the fleet changed (pipeline.ts limitsChanged). */
  changed: () => void;
}

/**
 * Limits: the file's and the control stream's, then each worker's share of them, which follows the
 * fleet's presence (docs/limits.md). Only a limit needs the fleet's size before the first message:
 * otherwise consuming starts at once. With ISOLATION=off (no `isolation`) limits are not applied.
 */
export async function startLimits(isolation: TargetIsolation<Job> | undefined, at: LimitsAtStart): Promise<FleetPresence | undefined> {
  const { control, clock, logger, changed } = at;
  const limitsAtStart = at.targetLimits.size > 0 || control.originLimits().some(({ limit }) => limit !== null);
  if (!isolation) {
    if (limitsAtStart) logger.warn('target limits are not applied with ISOLATION=off');
    return undefined;
  }
  applyLimits(isolation, { file: at.targetLimits, control, targetKey: at.targetKey, clock, logger, changed });
  const presence = await startFleetPresence({ urls: at.urls, names: at.names, logger, clock, waitForOthers: limitsAtStart });
  followFleet(isolation, presence, clock, changed);
  return presence;
}

/** What the ordered shards need beside the topology: OrderedKeys' dependencies less those the shards' names give. */
export type ShardDeps = Omit<OrderedKeysDeps, 'logs' | 'resumeRoute' | 'wakeRoute' | 'homeLane' | 'maxWaiting'>;

/**
 * The ordered shards: each a queue with a single active consumer, whose window is `orderedPrefetch`
 * (in queues mode as much again, for retries' copies the levels let out early, held until due); this
 * worker keeps the order of the keys of those it owns (ordered-keys.ts).
 */
export function orderedShards(
  topology: Pick<ResolvedTopology, 'names' | 'mode'>,
  orderedPrefetch: number,
  deps: ShardDeps,
): { ordered: OrderedKeys; lanes: Array<[string, Lane, number]> } {
  const { names } = topology;
  const window = orderedPrefetch * (topology.mode === 'queues' ? 2 : 1);
  const lanes = names.orderedQueues.map((queue, shard): [string, Lane, number] => [queue, `o${shard}`, window]);
  const ordered = new OrderedKeys({
    ...deps,
    logs: new Map(lanes.map(([, lane], shard) => [lane, names.orderedLogs[shard] as string])),
    resumeRoute: (key) => ({ exchange: names.exchange, routingKey: orderedRoutingKey(orderBucket(key)) }),
    // Bucket b lands in shard b mod ORDERED_SHARDS, so bucket `shard` lands in that shard.
    wakeRoute: (shard) => ({ exchange: names.exchange, routingKey: orderedRoutingKey(shard) }),
    homeLane: (key) => `o${orderedShard(orderBucket(key), lanes.length)}`,
    maxWaiting: Math.max(1, Math.floor(orderedPrefetch / 4)),
  });
  return { ordered, lanes };
}
