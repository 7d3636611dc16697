import { createHash } from 'node:crypto';
import { RelayError } from '../../src/errors.js';

/**
 * What the `rabbitmq/` image is built from, read from the same four variables that `docker compose`
 * (docker-compose.yml's build args) and `scripts/compose-smoke.sh` read, so one setting selects the
 * series everywhere:
 *
 *   RABBITMQ_IMAGE          the base image, e.g. rabbitmq:4.3-management or rabbitmq:4.0-management
 *   DELAYED_PLUGIN          on | off: compile the delayed-message plugin into the image
 *   DELAYED_PLUGIN_VERSION  the plugin release (its major.minor must be the broker's), e.g. 4.0.7
 *   DELAYED_PLUGIN_COMMIT   the commit of that release, 40 hex digits
 *
 * A variable that is unset or empty is not passed, so the Dockerfile's own default applies.
 */
export const BROKER_IMAGE_VARIABLES = ['RABBITMQ_IMAGE', 'DELAYED_PLUGIN', 'DELAYED_PLUGIN_VERSION', 'DELAYED_PLUGIN_COMMIT'] as const;

export interface BrokerImageSpec {
  /** `--build-arg`s for rabbitmq/Dockerfile: only the variables that were set. */
  buildArgs: Record<string, string>;
  /** The local tag for the build: one per set of build args, so series never overwrite each other. */
  tag: string;
  /** For log lines: the args, or "Dockerfile defaults". */
  label: string;
}

const configError = (key: string, value: string, rule: string): RelayError =>
  new RelayError('CR_ERR_CONFIG', `${key}: ${rule} (value "${value}")`, { field: key });

/** The image to build for `env`; a malformed value throws CR_ERR_CONFIG naming the variable and value. */
export function brokerImageSpec(env: NodeJS.ProcessEnv): BrokerImageSpec {
  const buildArgs: Record<string, string> = {};
  for (const key of BROKER_IMAGE_VARIABLES) {
    const value = env[key]?.trim();
    if (value) buildArgs[key] = value;
  }
  const { RABBITMQ_IMAGE: image, DELAYED_PLUGIN: plugin, DELAYED_PLUGIN_VERSION: version, DELAYED_PLUGIN_COMMIT: commit } = buildArgs;
  if (image !== undefined && !/^[\w.\-/:@]+$/.test(image))
    throw configError('RABBITMQ_IMAGE', image, 'must be an image reference such as rabbitmq:4.3-management');
  if (plugin !== undefined && plugin !== 'on' && plugin !== 'off') throw configError('DELAYED_PLUGIN', plugin, 'must be on or off');
  if (version !== undefined && !/^\d+\.\d+\.\d+$/.test(version))
    throw configError('DELAYED_PLUGIN_VERSION', version, 'must look like 4.0.7');
  if (commit !== undefined && !/^[0-9a-f]{40}$/.test(commit))
    throw configError('DELAYED_PLUGIN_COMMIT', commit, 'must be a full commit hash (40 lowercase hex digits)');
  const keys = Object.keys(buildArgs);
  const label = keys.length === 0 ? 'Dockerfile defaults' : keys.map((key) => `${key}=${buildArgs[key]}`).join(' ');
  const digest = createHash('sha256').update(JSON.stringify(buildArgs)).digest('hex').slice(0, 12);
  return { buildArgs, tag: `callback-relay-test-rabbitmq:${digest}`, label };
}

/** Which broker the integration harness uses: `TEST_BROKER` = auto (unset), `local` or `container`. */
export type BrokerChoice = 'auto' | 'local' | 'container';

export function brokerChoice(env: NodeJS.ProcessEnv): BrokerChoice {
  const value = env.TEST_BROKER?.trim() ?? '';
  if (value === '' || value === 'auto') return 'auto';
  if (value === 'local' || value === 'container') return value;
  throw configError('TEST_BROKER', value, 'must be auto, local (a throwaway rabbitmq-server node) or container (the rabbitmq/ image)');
}
