import { randomBytes } from 'node:crypto';
import amqplib from 'amqplib';
import { deleteTopology } from '../src/topology/declare-topology.js';
import { DEFAULT_LANES } from '../src/topology/lanes.js';
import { topologyNames } from '../src/topology/topology-names.js';

export const randomPrefix = (kind: string): string => `${kind}-${randomBytes(4).toString('hex')}`;

/** Deletes every queue and exchange of a prefix, so benchmark runs leave the broker as they found it. */
export async function deleteTopologyAt(url: string, prefix: string, lanes = DEFAULT_LANES): Promise<void> {
  const connection = await amqplib.connect(url);
  const channel = await connection.createChannel();
  await deleteTopology(channel, topologyNames(prefix, lanes));
  await connection.close();
}
