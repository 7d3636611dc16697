/**
 * Invariants of the cluster stack (docker-compose.cluster.yml, rabbitmq/cluster.conf), checked as text:
 * what breaks the cluster's formation or its failover if someone edits one file without the other.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { amqpUrls } from '../../src/config/amqp-urls.js';

const read = (path: string): string => readFileSync(fileURLToPath(new URL(`../../${path}`, import.meta.url)), 'utf8');

type Dict = Record<string, unknown>;
const compose = parse(read('docker-compose.cluster.yml'), { merge: true }) as { services: Record<string, Dict> };
const nodes = Object.entries(compose.services).filter(([name]) => name.startsWith('rabbitmq-'));
const conf = read('rabbitmq/cluster.conf');
/** `key = value` lines of cluster.conf (comments and blank lines left out). */
const settings = new Map(
  conf
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.trim().startsWith('#'))
    .map((line) => line.split('=').map((part) => part.trim()) as [string, string]),
);

describe('docker-compose.cluster.yml and rabbitmq/cluster.conf', () => {
  it('runs three nodes whose hostnames are the nodes cluster.conf lists for peer discovery', () => {
    expect(settings.get('cluster_formation.peer_discovery_backend')).toBe('classic_config');
    const listed = [...settings].filter(([key]) => key.startsWith('cluster_formation.classic_config.nodes.')).map(([, value]) => value);
    expect(nodes).toHaveLength(3);
    expect(nodes.map(([, service]) => `rabbit@${String(service.hostname)}`).sort()).toEqual([...listed].sort());
  });

  it('mounts cluster.conf into conf.d on every node, gives each its own volume and publishes ports on loopback only', () => {
    const volumes = new Set<string>();
    for (const [name, service] of nodes) {
      const mounts = (service.volumes as string[]).map(String);
      expect(mounts, name).toContain('./rabbitmq/cluster.conf:/etc/rabbitmq/conf.d/20-cluster.conf:ro');
      const data = mounts.find((mount) => mount.endsWith(':/var/lib/rabbitmq'));
      expect(data, name).toBeDefined();
      volumes.add(String(data));
      for (const port of (service.ports as string[]).map(String)) expect(port, name).toMatch(/^127\.0\.0\.1:/);
    }
    expect(volumes.size).toBe(3);
  });

  it('takes the Erlang cookie from RABBITMQ_ERLANG_COOKIE, with a default that says to change it', () => {
    for (const [name, service] of nodes) {
      const env = service.environment as Record<string, string>;
      expect(env.RABBITMQ_ERLANG_COOKIE, name).toMatch(/^\$\{RABBITMQ_ERLANG_COOKIE:-.*change-me\}$/);
      expect((service.entrypoint as string[]).join(' '), name).toContain('.erlang.cookie');
    }
  });

  it('gives the worker every node in AMQP_URL, in queues mode on quorum queues', () => {
    const env = compose.services.worker?.environment as Record<string, string>;
    const hosts = amqpUrls(env.AMQP_URL ?? '').map((url) => new URL(url).hostname);
    expect(hosts.sort()).toEqual(nodes.map(([name]) => name).sort());
    expect(env.DELAY_MODE).toBe('queues');
    expect(env.QUEUE_TYPE).toBe('quorum');
  });

  it('places quorum queue leaders on every node (balanced)', () => {
    expect(settings.get('queue_leader_locator')).toBe('balanced');
  });
});
