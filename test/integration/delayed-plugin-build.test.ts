/**
 * rabbitmq/build-delayed-plugin.sh is what rabbitmq/Dockerfile runs to compile the delayed-message
 * plugin into the broker image. No Docker engine runs here, so the same script is run against the
 * local broker (Debian's RabbitMQ) with the plugin source kept beside the repository
 * (../shared/rabbitmq-plugins, the release line for that broker), and its output is loaded into a
 * throwaway node: a broken compile step, a malformed .app or a wrong layout fails here, not in a
 * user's image build.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import amqplib from 'amqplib';
import { afterAll, describe, expect, it } from 'vitest';
import { inspectBroker } from '../../src/topology/inspect-broker.js';
import { findRabbitmqServer, startLocalBroker, type LocalBroker } from '../support/local-broker.js';
import { sleep } from '../support/modes.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const script = join(repo, 'rabbitmq/build-delayed-plugin.sh');
const sharedPlugins = join(repo, '..', 'shared', 'rabbitmq-plugins');
const APP = 'rabbitmq_delayed_message_exchange';

/** The plugin source beside the repository: `<APP>-<version>/src/*.erl`. */
const source = existsSync(sharedPlugins)
  ? readdirSync(sharedPlugins)
      .filter((name) => name.startsWith(`${APP}-`) && existsSync(join(sharedPlugins, name, 'src')))
      .map((name) => ({ dir: join(sharedPlugins, name), version: name.slice(APP.length + 1) }))[0]
  : undefined;
const bin = findRabbitmqServer();
const hasErlc = spawnSync('sh', ['-c', 'command -v erlc'], { encoding: 'utf8' }).status === 0;

const skipReason =
  source === undefined
    ? `no plugin source in ${sharedPlugins} (expected ${APP}-<version>/src)`
    : bin === undefined
      ? 'rabbitmq-server is not installed'
      : !hasErlc
        ? 'erlc is not installed (Debian: apt-get install erlang-base)'
        : undefined;

/** The broker's own plugins folder: <install>/plugins, where <install>/sbin/rabbitmq-server is the real script. */
const brokerPluginsOf = (serverBin: string): string => join(dirname(dirname(realpathSync(serverBin))), 'plugins');

describe.skipIf(skipReason !== undefined)(`rabbitmq/build-delayed-plugin.sh${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  const out = mkdtempSync(join(tmpdir(), 'callback-relay-plugin-'));
  let broker: LocalBroker | undefined;
  afterAll(async () => {
    await broker?.stop();
    rmSync(out, { recursive: true, force: true });
  });

  it('builds a plugin a node loads: it offers x-delayed-message and delays a message', async () => {
    const brokerPlugins = brokerPluginsOf(bin!);
    const build = spawnSync('bash', [script, source!.dir, out], {
      encoding: 'utf8',
      env: { ...process.env, PLUGIN_VSN: source!.version, BROKER_PLUGINS_DIR: brokerPlugins },
    });
    expect(build.status, `${build.stdout}${build.stderr}`).toBe(0);
    const built = join(out, `${APP}-${source!.version}`);
    expect(build.stdout.trim()).toBe(built);
    expect(existsSync(join(built, 'ebin', `${APP}.app`))).toBe(true);

    // Only the broker's plugins and the fresh build on the node's plugin path: the prebuilt copy
    // beside the repository must not be what answers.
    broker = await startLocalBroker(bin!, (env) => {
      env.RABBITMQ_PLUGINS_DIR = `${brokerPlugins}:${out}`;
      writeFileSync(env.RABBITMQ_ENABLED_PLUGINS_FILE!, `[${APP}].\n`);
    });
    expect((await inspectBroker(broker.url)).hasDelayedPlugin).toBe(true);

    const connection = await amqplib.connect(broker.url);
    try {
      const channel = await connection.createConfirmChannel();
      await channel.assertExchange('delayed', 'x-delayed-message', { arguments: { 'x-delayed-type': 'direct' } });
      const { queue } = await channel.assertQueue('', { exclusive: true });
      await channel.bindQueue(queue, 'delayed', 'key');
      const delayMs = 1_000;
      const publishedAt = Date.now();
      channel.publish('delayed', 'key', Buffer.from('later'), { headers: { 'x-delay': delayMs } });
      await channel.waitForConfirms();
      let message: amqplib.GetMessage | false = false;
      while (message === false && Date.now() - publishedAt < 30_000) {
        message = await channel.get(queue, { noAck: true });
        if (message === false) await sleep(100);
      }
      expect(message && message.content.toString()).toBe('later');
      // A lower bound only: the plugin held the message at least its delay (never faster).
      expect(Date.now() - publishedAt).toBeGreaterThanOrEqual(delayMs);
    } finally {
      await connection.close();
    }
  });
});
