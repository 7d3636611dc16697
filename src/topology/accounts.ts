/*
 * Broker accounts, one per role, each with the smallest RabbitMQ permissions its part needs: what
 * `callback-relay accounts` prints, docs/security.md tabulates and the least-privilege tests apply.
 *
 * RabbitMQ checks configure / write / read per resource name, with one regular expression each per
 * user and vhost: https://www.rabbitmq.com/docs/access-control#authorisation. What each operation
 * needs (from that page's table):
 * - declare (not passive) or delete a queue or exchange: configure on it. A passive declare needs none,
 *   which is how producers and operators check that the topology exists.
 * - declare a queue with a dead-letter exchange: also read on the queue and write on that exchange
 *   (the relay dead-letters through the default exchange, whose name for permissions is amq.default);
 * - bind or unbind: write on the queue, read on the exchange;
 * - publish: write on the exchange (the default exchange: amq.default, which reaches every queue);
 * - consume, get, purge: read on the queue.
 *
 * Topic permissions restrict routing keys on topic exchanges only. The exchange producers publish to
 * (P) is direct or x-delayed-message, and a routing key on P.delay only chooses a delay, so they would
 * add nothing here: every role's topic permissions are left as the broker's default. So writing P
 * lets a producer publish to the lanes (`deliver.<bucket>`) and to the ordered shards
 * (`ordered.<bucket>`) alike, and an ordered callback is never delayed, so it needs nothing more.
 *
 * The worker's rights cover every name under `P.`: the ordered shards P.ordered.<n> (consume), their
 * log streams P.ordered.log.<n> (written through the default exchange, read by consuming), and the
 * delay routes an ordered retry takes back to its shard (P.delay, P.due).
 */
import type { DelayModeSetting } from './delay-levels.js';

export const ROLES = ['producer', 'ingest', 'worker', 'console', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** What a role is for, in a line (the command's comments and the docs' table). */
export const ROLE_PURPOSE: Record<Role, string> = {
  producer: 'the library publisher and `callback-relay publish`: publishes callbacks, nothing else',
  ingest: 'the HTTP ingest (`callback-relay ingest`): publishes callbacks like a producer',
  worker: 'workers (`npm start`): declare the topology, consume, deliver, retry, park, write events and control markers',
  console: 'the operator: `callback-relay console`, `dlq`, `cancel`, `target` and `history`',
  admin: 'the one-off topology step (`npm run topology`, `callback-relay topology`) and its `delete --yes`',
};

/** One vhost's permissions of one user: anchored regular expressions, as rabbitmqctl set_permissions takes them. */
export interface Permissions {
  configure: string;
  write: string;
  read: string;
}

export interface Account {
  role: Role;
  user: string;
  permissions: Permissions;
}

/** The exchange name the inspection of a broker declares and deletes at once (connect-topology.ts). */
export const PROBE_EXCHANGE_PREFIX = 'callback-relay.probe.';

/** Matches nothing: RabbitMQ's way of granting no right of a kind (the empty pattern is the same). */
export const NOTHING = '^$';

/** `text` as a literal inside a regular expression (the prefix's dots, and anything else special). */
export const escapeRegex = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const anyOf = (alternatives: readonly string[]): string => `^(${alternatives.join('|')})$`;

/**
 * The accounts of prefix P. `mode` is DELAY_MODE: in queues mode a producer also writes P.delay (the
 * delay levels' entry); `auto` grants what either mode needs. User names are `<P>-<role>` unless
 * `userPrefix` says otherwise.
 */
export function accountsFor(prefix: string, mode: DelayModeSetting, userPrefix = prefix): Account[] {
  const p = escapeRegex(prefix);
  // Everything the topology holds: P itself and every name under `P.` (topology-names.ts).
  const own = [p, `${p}\\..+`];
  const probe = `${escapeRegex(PROBE_EXCHANGE_PREFIX)}.+`;
  // The presence queues workers declare are server-named (queue.declare with an empty name: amq.gen-…).
  const serverNamed = 'amq\\.gen-.+';
  const defaultExchange = 'amq\\.default';
  const producerWrite = mode === 'plugin' ? `^${p}$` : anyOf([p, `${p}\\.delay`]);
  const producer: Permissions = { configure: NOTHING, write: producerWrite, read: NOTHING };
  const admin: Permissions = { configure: anyOf([...own, probe]), write: anyOf([...own, defaultExchange]), read: anyOf(own) };
  const permissions: Record<Role, Permissions> = {
    producer,
    ingest: producer,
    worker: {
      configure: anyOf([...own, serverNamed, probe]),
      write: anyOf([...own, defaultExchange, serverNamed]),
      read: anyOf([...own, serverNamed]),
    },
    console: {
      configure: NOTHING,
      // Markers go to P.control, parked callbacks back to P.dead, both through the default exchange; replays to P.
      write: anyOf([p, defaultExchange]),
      read: anyOf([`${p}\\.dead`, `${p}\\.control`, `${p}\\.history`]),
    },
    admin,
  };
  return ROLES.map((role) => ({ role, user: `${userPrefix}-${role}`, permissions: permissions[role] }));
}

/** Whether `name` is granted by `pattern` (RabbitMQ matches unanchored; every pattern here is anchored). */
export const permits = (pattern: string, name: string): boolean => new RegExp(pattern).test(name === '' ? 'amq.default' : name);
