/**
 * rabbitmq/build-delayed-plugin.sh is what rabbitmq/Dockerfile runs to compile the delayed-message
 * plugin into the broker image. No Docker engine runs here, so the same script is run against the
 * local broker (Debian's RabbitMQ) with the plugin source kept beside the repository
 * (../shared/rabbitmq-plugins, the release line for that broker), and its output is loaded into a
 * throwaway node: a broken compile step, a malformed .app or a wrong layout fails here, not in a
 * user's image build. The Dockerfile's plugin stage itself (fetch at the pinned commit, verify,
 * build, rabbitmq-plugins) runs here too, with a local repository standing in for GitHub.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import amqplib from 'amqplib';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { inspectBroker } from '../../src/topology/connect-topology.js';
import { instructionsOf, stagesOf } from '../support/dockerfile.js';
import { findRabbitmqServer, startLocalBroker, type LocalBroker } from '../support/local-broker.js';
import { sleep } from '../support/modes.js';
import { randomPrefix } from '../support/relay.js';

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
const onPath = (tool: string): boolean => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
const hasErlc = onPath('erlc');

const skipReason =
  source === undefined
    ? `no plugin source in ${sharedPlugins} (expected ${APP}-<version>/src)`
    : bin === undefined
      ? 'rabbitmq-server is not installed'
      : !hasErlc
        ? 'erlc is not installed (Debian: apt-get install erlang-base)'
        : !onPath('git')
          ? 'git is not installed'
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

    await expectDelayedDelivery(broker.url);
  });

  it("runs the Dockerfile's plugin stage as written: fetch at the pinned commit, verify, build, accepted by rabbitmq-plugins", () => {
    // GitHub is replaced by a local repository of the same source (git's url.<base>.insteadOf), and
    // apt-get by a no-op; every other command of the RUN is the Dockerfile's own.
    const work = join(out, 'stage');
    const upstream = join(work, 'upstream');
    mkdirSync(join(work, 'bin'), { recursive: true });
    cpSync(join(source!.dir, 'src'), join(upstream, 'src'), { recursive: true });
    const git = (...args: string[]): string => {
      const run = spawnSync('git', ['-C', upstream, ...args], { encoding: 'utf8' });
      expect(run.status, run.stderr).toBe(0);
      return run.stdout.trim();
    };
    git('init', '-q');
    git('add', '.');
    git('-c', 'user.name=test', '-c', 'user.email=test@localhost', 'commit', '-qm', 'plugin source');
    const commit = git('rev-parse', 'HEAD');
    writeFileSync(join(work, 'bin', 'apt-get'), '#!/bin/sh\nexit 0\n');
    chmodSync(join(work, 'bin', 'apt-get'), 0o755);

    const stage = stagesOf(instructionsOf(readFileSync(join(repo, 'rabbitmq/Dockerfile'), 'utf8')))[0] ?? [];
    const run = stage.find(({ keyword, args }) => keyword === 'RUN' && args.includes('build-delayed-plugin.sh'))?.args ?? '';
    // The stage's absolute scratch paths (/src, /out, /tmp) move into this test's directory.
    const script = run.replace(/(^|[\s:=])\/(src|out|tmp)\b/g, `$1${work}/$2`);
    mkdirSync(join(work, 'tmp'));
    const stageRun = spawnSync('sh', ['-c', script], {
      encoding: 'utf8',
      env: {
        ...process.env,
        PATH: [join(work, 'bin'), join(repo, 'rabbitmq'), dirname(bin!), process.env.PATH].join(':'),
        RABBITMQ_HOME: dirname(brokerPluginsOf(bin!)),
        DELAYED_PLUGIN: 'on',
        DELAYED_PLUGIN_VERSION: source!.version,
        DELAYED_PLUGIN_COMMIT: commit,
        GIT_CONFIG_COUNT: '2',
        GIT_CONFIG_KEY_0: `url.${upstream}.insteadOf`,
        GIT_CONFIG_VALUE_0: 'https://github.com/rabbitmq/rabbitmq-delayed-message-exchange.git',
        GIT_CONFIG_KEY_1: 'uploadpack.allowAnySHA1InWant',
        GIT_CONFIG_VALUE_1: 'true',
      },
    });
    expect(stageRun.status, `${stageRun.stdout}${stageRun.stderr}`).toBe(0);
    expect(existsSync(join(work, 'out', `${APP}-${source!.version}`, 'ebin', `${APP}.app`))).toBe(true);
    expect(readFileSync(join(work, 'tmp', 'enabled_plugins'), 'utf8')).toContain(APP);
  });
});

/** The broker at `url` offers x-delayed-message, and holds a message for its delay before routing it. */
async function expectDelayedDelivery(url: string): Promise<void> {
  const connection = await amqplib.connect(url);
  try {
    const channel = await connection.createConfirmChannel();
    // A name of its own, deleted afterwards: the run's shared broker may be the one asked.
    const exchange = `${randomPrefix()}.delayed`;
    await channel.assertExchange(exchange, 'x-delayed-message', {
      durable: false,
      autoDelete: true,
      arguments: { 'x-delayed-type': 'direct' },
    });
    const { queue } = await channel.assertQueue('', { exclusive: true });
    await channel.bindQueue(queue, exchange, 'key');
    const delayMs = 1_000;
    const publishedAt = Date.now();
    channel.publish(exchange, 'key', Buffer.from('later'), { headers: { 'x-delay': delayMs } });
    await channel.waitForConfirms();
    let message: amqplib.GetMessage | false = false;
    while (message === false && Date.now() - publishedAt < 30_000) {
      message = await channel.get(queue, { noAck: true });
      if (message === false) await sleep(100);
    }
    expect(message && message.content.toString()).toBe('later');
    // A lower bound only: the plugin held the message at least its delay (never faster).
    expect(Date.now() - publishedAt).toBeGreaterThanOrEqual(delayMs);
    await channel.deleteExchange(exchange);
  } finally {
    await connection.close();
  }
}

// On a run against the harness's container, the rabbitmq/ image itself was built for the series under
// test: with DELAYED_PLUGIN=on its plugin stage (fetch at the pinned commit, verify, build-delayed-plugin.sh,
// rabbitmq-plugins) ran for real, and the broker must then offer the plugin it compiled.
const containerRun = inject('brokerSource') === 'testcontainers';
const imageSkip = !containerRun
  ? "the run's broker is not the rabbitmq/ image (TEST_BROKER=container builds it)"
  : !inject('hasDelayedPlugin')
    ? `the image was built without the plugin (DELAYED_PLUGIN=off; RabbitMQ ${inject('brokerVersion')}${/^(3|4\.[0-2])\./.test(inject('brokerVersion')) ? '' : ' cannot run it'})`
    : undefined;
describe.skipIf(imageSkip !== undefined)(`the rabbitmq/ image built for this run${imageSkip ? ` (skipped: ${imageSkip})` : ''}`, () => {
  it('offers x-delayed-message from the plugin its Dockerfile compiled, and delays a message', async () => {
    await expectDelayedDelivery(inject('amqpUrl'));
  });
});
