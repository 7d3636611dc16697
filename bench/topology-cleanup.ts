import { randomBytes } from 'node:crypto';
import { deleteTopologyAt as deleteNamesAt } from '../src/topology/teardown.js';
import { DEFAULT_LANES, topologyNames } from '../src/topology/topology-names.js';

export const randomPrefix = (kind: string): string => `${kind}-${randomBytes(4).toString('hex')}`;

/** Deletes every queue and exchange of a prefix, so benchmark runs leave the broker as they found it. */
export const deleteTopologyAt = (url: string, prefix: string, lanes = DEFAULT_LANES): Promise<void> =>
  deleteNamesAt(url, topologyNames(prefix, lanes));
