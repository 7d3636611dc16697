import { loadConfig } from '../config/load-config.js';
import { amqpUrls } from '../config/amqp-urls.js';
import { accountsFor, ROLES, type Role } from '../topology/accounts.js';
import { definitions, generatePassword, rabbitmqctlScript, type AccountWithPassword } from '../topology/account-formats.js';
import type { DelayModeSetting } from '../topology/delay-levels.js';
import { parseFlags, parseOrReport, UsageError } from './usage-error.js';

export const ACCOUNTS_USAGE = `callback-relay accounts [--prefix P] [--vhost V] [--delay-mode auto|plugin|queues] [--format rabbitmqctl|definitions]

  Prints one broker account per role (producer, ingest, worker, console, admin), each with the
  smallest permissions its part needs on prefix P (default TOPOLOGY_PREFIX) in vhost V (default: the
  vhost of AMQP_URL, else /), as rabbitmqctl lines (default) or a definitions JSON document for
  \`rabbitmqctl import_definitions\`. Users are named <P>-<role>.

  Passwords come from ACCOUNT_PASSWORD_PRODUCER, ACCOUNT_PASSWORD_INGEST, ACCOUNT_PASSWORD_WORKER,
  ACCOUNT_PASSWORD_CONSOLE and ACCOUNT_PASSWORD_ADMIN when set, else are generated afresh on every run.
  The output holds them (or their hashes): keep it where the broker's admin keeps secrets.
  --delay-mode defaults to DELAY_MODE; auto grants what either mode needs. See docs/security.md.`;

export interface AccountsCommand {
  action: 'print' | 'help';
  prefix?: string | undefined;
  vhost?: string | undefined;
  delayMode?: DelayModeSetting | undefined;
  format: 'rabbitmqctl' | 'definitions';
}

const FORMATS = ['rabbitmqctl', 'definitions'] as const;
const MODES = ['auto', 'plugin', 'queues'] as const;

/** Parses `accounts` flags; a bad one is a UsageError naming the flag and its value. */
export function parseAccountsArgs(argv: string[]): AccountsCommand {
  const { values } = parseFlags({
    args: argv,
    options: {
      prefix: { type: 'string' },
      vhost: { type: 'string' },
      'delay-mode': { type: 'string' },
      format: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: false,
  });
  if (values.help) return { action: 'help', format: 'rabbitmqctl' };
  const format = values.format ?? 'rabbitmqctl';
  if (!(FORMATS as readonly string[]).includes(format))
    throw new UsageError(`--format: ${JSON.stringify(format)} is not one of ${FORMATS.join(', ')}`);
  const mode = values['delay-mode'];
  if (mode !== undefined && !(MODES as readonly string[]).includes(mode))
    throw new UsageError(`--delay-mode: ${JSON.stringify(mode)} is not one of ${MODES.join(', ')}`);
  if (values.prefix !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(values.prefix)) {
    throw new UsageError(
      `--prefix: ${JSON.stringify(values.prefix)} is not a topology prefix (letters, digits, ".", "_" and "-", not starting with a sign)`,
    );
  }
  if (values.vhost !== undefined && values.vhost === '') throw new UsageError('--vhost: "" is not a vhost name (the default vhost is /)');
  return {
    action: 'print',
    prefix: values.prefix,
    vhost: values.vhost,
    delayMode: mode as DelayModeSetting | undefined,
    format: format as AccountsCommand['format'],
  };
}

/** The vhost an AMQP URL names: its path, decoded (amqp://host/ and amqp://host name the default vhost, /). */
export function vhostOf(url: string | undefined): string {
  if (url === undefined) return '/';
  try {
    const path = new URL(url).pathname;
    return path === '' || path === '/' ? '/' : decodeURIComponent(path.slice(1));
  } catch {
    return '/';
  }
}

/** The environment variable a role's password is read from. */
export const passwordVariable = (role: Role): string => `ACCOUNT_PASSWORD_${role.toUpperCase()}`;

/** The text `callback-relay accounts` prints, given the settings' defaults and the environment. */
export function accountsOutput(
  command: AccountsCommand,
  defaults: { prefix: string; vhost: string; delayMode: DelayModeSetting },
  env: NodeJS.ProcessEnv,
  password: () => string = generatePassword,
): string {
  const prefix = command.prefix ?? defaults.prefix;
  const vhost = command.vhost ?? defaults.vhost;
  const accounts: AccountWithPassword[] = accountsFor(prefix, command.delayMode ?? defaults.delayMode).map((account) => ({
    ...account,
    password: env[passwordVariable(account.role)] || password(),
  }));
  return command.format === 'definitions'
    ? `${JSON.stringify(definitions(accounts, vhost), null, 2)}\n`
    : rabbitmqctlScript(accounts, vhost);
}

/** Runs `callback-relay accounts …` and returns the exit status (0 printed, 2 bad flags). */
export function accountsCommand(argv: string[]): number {
  const command = parseOrReport('accounts', () => parseAccountsArgs(argv));
  if (command === undefined) return 2;
  if (command.action === 'help') {
    process.stdout.write(`${ACCOUNTS_USAGE}\n`);
    return 0;
  }
  const config = loadConfig();
  const defaults = { prefix: config.topologyPrefix, vhost: vhostOf(amqpUrls(config.amqpUrl)[0]), delayMode: config.delayMode };
  process.stdout.write(accountsOutput(command, defaults, process.env));
  return 0;
}

export { ROLES };
