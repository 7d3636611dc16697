/** The plugin setting of the throwaway broker nodes (test/support/broker-plugins.ts), on fake folders. */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isRelayError } from '../../../src/errors.js';
import { DELAYED_PLUGIN, nodePlugins } from '../../support/broker-plugins.js';

let root: string;
let bin: string;
let ownPlugins: string;

beforeEach(() => {
  // Debian's layout: bin/rabbitmq-server links to lib/rabbitmq_server-X/sbin/rabbitmq-server.
  root = mkdtempSync(join(tmpdir(), 'cr-plugins-'));
  const server = join(root, 'lib', 'rabbitmq_server-9.9.9');
  ownPlugins = join(server, 'plugins');
  mkdirSync(join(server, 'sbin'), { recursive: true });
  mkdirSync(ownPlugins);
  writeFileSync(join(server, 'sbin', 'rabbitmq-server'), '');
  mkdirSync(join(root, 'bin'));
  bin = join(root, 'bin', 'rabbitmq-server');
  symlinkSync(join(server, 'sbin', 'rabbitmq-server'), bin);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function folderWith(...entries: string[]): string {
  const dir = mkdtempSync(join(root, 'extra-'));
  for (const entry of entries) mkdirSync(join(dir, entry));
  return dir;
}

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('nodePlugins', () => {
  it('unset or blank: the broker keeps its own plugin path and enables nothing', () => {
    expect(nodePlugins(bin, undefined)).toEqual({ pluginsDir: undefined, enabled: [] });
    expect(nodePlugins(bin, ' ')).toEqual({ pluginsDir: undefined, enabled: [] });
  });

  it('a folder with the delayed-message plugin: the broker folder first, then the given one, and the plugin enabled', () => {
    const extra = folderWith(`${DELAYED_PLUGIN}-3.10.2`);
    expect(nodePlugins(bin, extra)).toEqual({ pluginsDir: `${ownPlugins}:${extra}`, enabled: [DELAYED_PLUGIN] });
  });

  it('takes a colon-separated list and does not repeat the broker folder', () => {
    const extra = folderWith(`${DELAYED_PLUGIN}-3.10.2`);
    expect(nodePlugins(bin, `${ownPlugins}:${extra}:`).pluginsDir).toBe(`${ownPlugins}:${extra}`);
  });

  it('a folder that does not exist is a config error naming the setting and the value', () => {
    const error = thrown(() => nodePlugins(bin, join(root, 'missing')));
    expect(isRelayError(error, 'CR_ERR_CONFIG') && error.field).toBe('RABBITMQ_PLUGINS_DIR');
    expect((error as Error).message).toContain(join(root, 'missing'));
  });

  it('folders without the delayed-message plugin are a config error, not a silent skip of plugin mode', () => {
    const extra = folderWith('rabbitmq_other_plugin-1.0.0');
    const error = thrown(() => nodePlugins(bin, extra));
    expect(isRelayError(error, 'CR_ERR_CONFIG') && error.field).toBe('RABBITMQ_PLUGINS_DIR');
    expect((error as Error).message).toContain(extra);
  });
});
