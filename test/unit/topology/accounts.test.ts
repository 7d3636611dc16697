import { describe, expect, it } from 'vitest';
import { accountsFor, escapeRegex, NOTHING, permits, ROLES, type Account, type Role } from '../../../src/topology/accounts.js';
import { definitions, passwordHash, rabbitmqctlCommands, rabbitmqctlScript, shellWord } from '../../../src/topology/account-formats.js';
import { brokerFeatures, declaredNames } from '../../../src/topology/declare-list.js';
import { topologyDeclarations } from '../../../src/topology/declare-topology.js';
import { topologyNames } from '../../../src/topology/topology-names.js';

const PREFIX = 'callback-relay';
const names = topologyNames(PREFIX, 8);
const of = (accounts: Account[], role: Role): Account['permissions'] => accounts.find((account) => account.role === role)!.permissions;

/** Every queue and exchange the topology of `mode` declares, history included. */
function declared(mode: 'plugin' | 'queues'): { queues: string[]; exchanges: string[] } {
  const list = topologyDeclarations({
    names,
    mode,
    queueType: 'quorum',
    deliveryLimit: 20,
    broker: brokerFeatures('4.3.0'),
    history: { maxAge: '7D' },
  });
  const { queues, exchanges } = declaredNames(list);
  return mode === 'plugin' ? { queues: [...queues, names.dueQueue], exchanges } : { queues, exchanges };
}

describe('accounts per role', () => {
  it('one account per role, named <P>-<role>, every pattern anchored', () => {
    const accounts = accountsFor(PREFIX, 'auto');
    expect(accounts.map((account) => account.role)).toEqual([...ROLES]);
    expect(accounts.map((account) => account.user)).toEqual(ROLES.map((role) => `${PREFIX}-${role}`));
    for (const { permissions } of accounts) for (const pattern of Object.values(permissions)) expect(pattern).toMatch(/^\^.*\$$/);
  });

  it('escapes the prefix: a dot in it matches a dot only', () => {
    const { write } = of(accountsFor('a.b', 'plugin'), 'producer');
    expect(permits(write, 'a.b')).toBe(true);
    expect(permits(write, 'aXb')).toBe(false);
    expect(escapeRegex('a.b-c')).toBe('a\\.b-c');
  });

  it.each(['plugin', 'queues'] as const)('a producer writes the exchanges it publishes to and nothing else [%s mode]', (mode) => {
    const producer = of(accountsFor(PREFIX, mode), 'producer');
    expect(producer.configure).toBe(NOTHING);
    expect(producer.read).toBe(NOTHING);
    expect(permits(producer.write, names.exchange)).toBe(true);
    expect(permits(producer.write, names.delayExchange)).toBe(mode === 'queues');
    for (const name of [
      names.controlQueue,
      names.presenceExchange,
      names.eventsExchange,
      names.deadQueue,
      names.workQueue,
      '',
      'amq.default',
      `${PREFIX}.delay.up.1s`,
      'other',
    ]) {
      expect(permits(producer.write, name), name).toBe(false);
    }
    for (const { queues, exchanges } of [declared('plugin'), declared('queues')]) {
      for (const name of [...queues, ...exchanges]) {
        expect(permits(producer.configure, name), name).toBe(false);
        expect(permits(producer.read, name), name).toBe(false);
      }
    }
    expect(of(accountsFor(PREFIX, mode), 'ingest')).toEqual(producer);
  });

  it('auto grants a producer what either mode needs', () => {
    const { write } = of(accountsFor(PREFIX, 'auto'), 'producer');
    expect([names.exchange, names.delayExchange].every((name) => permits(write, name))).toBe(true);
  });

  it.each(['plugin', 'queues'] as const)(
    'a worker and the admin step may declare, bind and dead-letter everything of the topology, and nothing of another prefix [%s mode]',
    (mode) => {
      const accounts = accountsFor(PREFIX, mode);
      const { queues, exchanges } = declared(mode);
      for (const role of ['worker', 'admin'] as const) {
        const { configure, write, read } = of(accounts, role);
        for (const name of [...queues, ...exchanges, names.presenceExchange])
          expect(permits(configure, name), `${role} ${name}`).toBe(true);
        // Bindings: write on the queue, read on the exchange; dead-lettering through the default exchange.
        for (const name of queues) expect(permits(write, name) && permits(read, name), `${role} ${name}`).toBe(true);
        for (const name of exchanges) expect(permits(read, name) && permits(write, name), `${role} ${name}`).toBe(true);
        expect(permits(write, '')).toBe(true);
        expect(permits(configure, 'callback-relay.probe.0f1e')).toBe(true);
        for (const name of ['other', 'other.work', 'callback-relayx.work'])
          expect(permits(configure, name) || permits(write, name) || permits(read, name), `${role} ${name}`).toBe(false);
      }
      // Only workers declare the presence queues, server-named.
      expect(permits(of(accounts, 'worker').configure, 'amq.gen-Xk2')).toBe(true);
      expect(permits(of(accounts, 'worker').read, 'amq.gen-Xk2')).toBe(true);
      expect(permits(of(accounts, 'admin').configure, 'amq.gen-Xk2')).toBe(false);
    },
  );

  it.each(['plugin', 'queues'] as const)(
    'ordered delivery: a worker consumes the shards and writes and reads their logs; a producer only writes P [%s mode]',
    (mode) => {
      const accounts = accountsFor(PREFIX, mode);
      const worker = of(accounts, 'worker');
      const producer = of(accounts, 'producer');
      expect(names.orderedQueues).toHaveLength(4);
      for (const name of [...names.orderedQueues, ...names.orderedLogs]) {
        expect(permits(worker.read, name), name).toBe(true);
        expect(permits(producer.read, name) || permits(producer.write, name) || permits(producer.configure, name), name).toBe(false);
      }
      // Logs are written through the default exchange; ordered retries through P (plugin) or P.delay (queues).
      for (const name of ['', names.exchange, names.delayExchange]) expect(permits(worker.write, name), name).toBe(true);
      expect(permits(producer.write, names.exchange)).toBe(true);
      expect(permits(producer.write, '')).toBe(false);
    },
  );

  it('the console declares nothing, reads P.dead, P.control and P.history, writes markers and replays', () => {
    const console = of(accountsFor(PREFIX, 'auto'), 'console');
    expect(console.configure).toBe(NOTHING);
    for (const name of [names.deadQueue, names.controlQueue, names.historyQueue]) expect(permits(console.read, name), name).toBe(true);
    for (const name of [names.workQueue, names.pausedCheckQueue, names.eventsExchange, 'amq.gen-1'])
      expect(permits(console.read, name), name).toBe(false);
    for (const name of [names.exchange, '']) expect(permits(console.write, name), name).toBe(true);
    for (const name of [names.presenceExchange, names.eventsExchange, names.delayExchange])
      expect(permits(console.write, name), name).toBe(false);
  });
});

describe('account formats', () => {
  const accounts = accountsFor('p', 'plugin').map((account) => ({ ...account, password: `${account.role}-secret` }));

  it('rabbitmqctl: add_user, then set_permissions in the vhost, per role', () => {
    expect(rabbitmqctlCommands(accounts.slice(0, 1), '/')).toEqual([
      ['add_user', 'p-producer', 'producer-secret'],
      ['set_permissions', '-p', '/', 'p-producer', '^$', '^p$', '^$'],
    ]);
    const script = rabbitmqctlScript(accounts, 'relay');
    expect(script).toContain("rabbitmqctl set_permissions -p relay p-producer '^$' '^p$' '^$'\n");
    expect(script.split('\n').filter((line) => line.startsWith('rabbitmqctl add_user'))).toHaveLength(ROLES.length);
  });

  it('quotes shell words that need it', () => {
    expect(shellWord("it's")).toBe(`'it'\\''s'`);
    expect(shellWord('-p')).toBe('-p');
    expect(shellWord('/')).toBe('/');
  });

  it('definitions: users with RabbitMQ SHA-256 hashes, the vhost and the permissions', () => {
    const salt = Buffer.from([1, 2, 3, 4]);
    const document = definitions(accounts, '/', () => salt);
    expect(document.vhosts).toEqual([{ name: '/' }]);
    expect(document.users[0]).toEqual({
      name: 'p-producer',
      password_hash: passwordHash('producer-secret', salt),
      hashing_algorithm: 'rabbit_password_hashing_sha256',
      tags: [],
    });
    expect(document.permissions[0]).toEqual({ user: 'p-producer', vhost: '/', configure: '^$', write: '^p$', read: '^$' });
    // The documented example: salt 908D C60A, password test12 (https://www.rabbitmq.com/docs/passwords#computing-password-hash).
    expect(passwordHash('test12', Buffer.from('908DC60A', 'hex'))).toBe('kI3GCqW5JLMJa4iX1lo7X4D6XbYqlLgxIs30+P6tENUV2POR');
  });
});
