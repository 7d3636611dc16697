import { existsSync, readdirSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { RelayError } from '../../src/errors.js';

/** The plugin that gives a node the `x-delayed-message` exchange type (plugin delay mode). */
export const DELAYED_PLUGIN = 'rabbitmq_delayed_message_exchange';

/** What a throwaway node loads: its plugin search path (undefined: the broker's own) and the plugins to enable. */
export interface NodePlugins {
  pluginsDir: string | undefined;
  enabled: string[];
}

/**
 * The plugins of the throwaway nodes that tests, `npm run bench` and `npm run chaos` start.
 *
 * `RABBITMQ_PLUGINS_DIR` (colon-separated folders, as RabbitMQ itself reads it) adds folders to the
 * node's plugin search path. RabbitMQ replaces its default path with the variable, so the broker's own
 * `plugins` folder is kept in front; otherwise the node would lose the plugins it ships with. A folder
 * that holds the delayed-message plugin gets it enabled, so the node offers `x-delayed-message` and the
 * plugin-mode suites run. See https://www.rabbitmq.com/docs/plugins#plugin-directories.
 * Unset: the broker's own plugins, none enabled (plugin mode is then skipped).
 */
export function nodePlugins(serverBin: string, setting: string | undefined): NodePlugins {
  if (!setting?.trim()) return { pluginsDir: undefined, enabled: [] };
  const given = setting
    .split(':')
    .filter((dir) => dir.trim() !== '')
    .map((dir) => resolve(dir));
  for (const dir of given) {
    if (!existsSync(dir))
      throw new RelayError('CR_ERR_CONFIG', `RABBITMQ_PLUGINS_DIR: folder ${dir} does not exist (value "${setting}")`, {
        field: 'RABBITMQ_PLUGINS_DIR',
      });
  }
  const own = ownPluginsDir(serverBin);
  const path = [...new Set([...(own ? [own] : []), ...given])];
  const hasDelayed = path.some((dir) =>
    readdirSync(dir).some((entry) => entry.startsWith(`${DELAYED_PLUGIN}-`) || entry === DELAYED_PLUGIN),
  );
  if (!hasDelayed) {
    throw new RelayError('CR_ERR_CONFIG', `RABBITMQ_PLUGINS_DIR: no ${DELAYED_PLUGIN} in ${path.join(', ')} (value "${setting}")`, {
      field: 'RABBITMQ_PLUGINS_DIR',
    });
  }
  return { pluginsDir: path.join(':'), enabled: [DELAYED_PLUGIN] };
}

/**
 * The `plugins` folder of the installed broker: next to the `sbin` folder that `rabbitmq-server`
 * links to (Debian: /usr/lib/rabbitmq/lib/rabbitmq_server-<version>/plugins).
 */
function ownPluginsDir(serverBin: string): string | undefined {
  const candidates = [join(dirname(dirname(realpathSync(serverBin))), 'plugins')];
  const lib = '/usr/lib/rabbitmq/lib';
  if (existsSync(lib)) candidates.push(...readdirSync(lib).map((entry) => join(lib, entry, 'plugins')));
  return candidates.find((dir) => existsSync(dir));
}
