import type { ContainerCluster } from './container-cluster.js';

/** The node faults a container cluster run can play (`--fault NAME`, repeatable). */
export const FAULTS = ['kill', 'partition', 'rolling', 'replace'] as const;
export type Fault = (typeof FAULTS)[number];

export function parseFaults(values: string[] | undefined, quick: boolean): Fault[] {
  if (!values || values.length === 0) return quick ? ['kill', 'rolling'] : [...FAULTS];
  for (const value of values)
    if (!(FAULTS as readonly string[]).includes(value)) throw new Error(`--fault: one of ${FAULTS.join(', ')}, got ${value}`);
  return FAULTS.filter((fault) => values.includes(fault));
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Retries `step` every 2 s until it succeeds or `timeoutMs` passes (then throws its last error). */
async function until(step: () => Promise<unknown>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await step();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(2_000);
    }
  }
}

export interface FaultPlan {
  label: string;
  /** Plays the whole fault, from the first blow until the cluster is whole again. */
  run: () => Promise<void>;
}

/**
 * The four faults of issue #61, each one act from its first blow until the cluster has three nodes
 * running again, so the act's time span is the fault window the report measures. `say` narrates steps.
 */
export function faultPlan(fault: Fault, cluster: ContainerCluster, downMs: number, say: (line: string) => void): FaultPlan {
  const size = cluster.slots.length;
  switch (fault) {
    case 'kill': {
      // A crash: the VM gets no chance to hand anything over. Its quorum members elect leaders elsewhere.
      const slot = 1;
      return {
        label: `SIGKILL node 2 (docker kill) for ${downMs / 1000} s, then start it`,
        run: async () => {
          await cluster.docker(['kill', cluster.slots[slot]!.container]);
          await sleep(downMs);
          await cluster.docker(['start', cluster.slots[slot]!.container]);
          await cluster.waitReady(slot, size);
        },
      };
    }
    case 'partition': {
      // Off the cluster network only: the node runs on and keeps its clients, but sees no other node.
      // https://www.rabbitmq.com/docs/partitions
      const slot = 2;
      return {
        label: `partition node 3 from the others (docker network disconnect) for ${downMs / 1000} s`,
        run: async () => {
          const { container, host } = cluster.slots[slot]!;
          await cluster.docker(['network', 'disconnect', cluster.network, container]);
          await sleep(downMs);
          await cluster.docker(['network', 'connect', '--alias', host, cluster.network, container]);
          await cluster.waitReady(slot, size);
          await cluster.waitReady(0, size);
        },
      };
    }
    case 'rolling':
      // As an upgrade restarts each node: only when no quorum queue would lose its majority, drained
      // first (leaders moved, clients disconnected), then revived and leaders rebalanced at the end.
      // https://www.rabbitmq.com/docs/upgrade#rolling-upgrade
      return {
        label: 'rolling restart of nodes 1, 2, 3 (await quorum + 1, drain, stop, start, revive)',
        run: async () => {
          for (let slot = 0; slot < size; slot += 1) {
            const started = Date.now();
            await until(() => cluster.cli(slot, ['rabbitmq-upgrade', 'await_online_quorum_plus_one', '-t', '120'], 150_000), 300_000);
            await cluster
              .cli(slot, ['rabbitmq-upgrade', 'drain'], 120_000)
              .catch((error: Error) => say(`    drain of node ${slot + 1} failed: ${firstLine(error)}`));
            await cluster.docker(['stop', '-t', '60', cluster.slots[slot]!.container], 90_000);
            await cluster.docker(['start', cluster.slots[slot]!.container]);
            await cluster.waitReady(slot, size);
            await cluster.cli(slot, ['rabbitmq-upgrade', 'revive'], 60_000).catch(() => undefined);
            say(`    node ${slot + 1} restarted in ${((Date.now() - started) / 1000).toFixed(1)} s`);
          }
          await cluster
            .cli(0, ['rabbitmq-queues', 'rebalance', 'quorum'], 180_000)
            .catch((error: Error) => say(`    rebalance failed: ${firstLine(error)}`));
        },
      };
    case 'replace': {
      // The machine is gone with its disk: the cluster forgets the node, a new one joins, and every
      // quorum queue gets a replica on it again (three copies, not two).
      // https://www.rabbitmq.com/docs/clustering#removing-nodes, /docs/quorum-queues#replica-management
      const slot = 1;
      return {
        label: `node 2 lost for good (docker rm) for ${downMs / 1000} s, forgotten, replaced by a new node, quorum queues grown onto it`,
        run: async () => {
          const lost = cluster.slots[slot]!;
          await cluster.keepLog(slot);
          await cluster.docker(['rm', '-f', '-v', lost.container]);
          await sleep(downMs);
          await until(() => cluster.cli(0, ['rabbitmqctl', 'forget_cluster_node', lost.node], 120_000), 120_000);
          await cluster.replaceNode(slot, `rabbitmq-${size + 1}`);
          const fresh = cluster.slots[slot]!.node;
          await until(() => cluster.cli(0, ['rabbitmq-queues', 'grow', fresh, 'all'], 300_000), 300_000);
          say(`    ${lost.node} forgotten; ${fresh} joined; quorum queues grown onto it`);
        },
      };
    }
  }
}

const firstLine = (error: Error): string => error.message.split('\n').find((line) => line.trim() !== '') ?? error.message;

/** Quorum queues per leader node, from `rabbitmqctl list_queues name leader type` on `slot`'s node. */
export async function leadersByNode(cluster: ContainerCluster, slot: number, prefix: string): Promise<Record<string, number>> {
  const out = await cluster.cli(slot, ['rabbitmqctl', '-q', 'list_queues', 'name', 'leader', 'type', '--formatter', 'json'], 60_000);
  const counts: Record<string, number> = {};
  for (const queue of JSON.parse(out) as { name: string; leader?: string; type?: string }[]) {
    if (!queue.name.startsWith(`${prefix}.`) || queue.type !== 'quorum') continue;
    const leader = queue.leader ?? '?';
    counts[leader] = (counts[leader] ?? 0) + 1;
  }
  return counts;
}
