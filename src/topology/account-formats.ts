/*
 * The accounts of accounts.ts as something a broker takes: rabbitmqctl commands (argument lists, and
 * the shell lines printed from them) or a definitions document
 * (https://www.rabbitmq.com/docs/definitions), users with their password hashes.
 */
import { createHash, randomBytes } from 'node:crypto';
import { ROLE_PURPOSE, type Account } from './accounts.js';

export interface AccountWithPassword extends Account {
  password: string;
}

/** A fresh password: hex, so it never starts with `-` (rabbitmqctl would take it for a flag) nor needs quoting. */
export const generatePassword = (random: (size: number) => Buffer = randomBytes): string => random(24).toString('hex');

/** rabbitmqctl's arguments, one command each, that create the accounts in `vhost` (run after the vhost exists). */
export function rabbitmqctlCommands(accounts: readonly AccountWithPassword[], vhost: string): string[][] {
  return accounts.flatMap(({ user, password, permissions }) => [
    ['add_user', user, password],
    ['set_permissions', '-p', vhost, user, permissions.configure, permissions.write, permissions.read],
  ]);
}

/** rabbitmqctl's arguments that remove the accounts again. */
export const rabbitmqctlRemoval = (accounts: readonly Account[]): string[][] => accounts.map(({ user }) => ['delete_user', user]);

/** A POSIX shell word: single-quoted unless it is plainly safe. */
export const shellWord = (word: string): string => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`);

/** The shell script `callback-relay accounts` prints: a comment per role, then its rabbitmqctl lines. */
export function rabbitmqctlScript(accounts: readonly AccountWithPassword[], vhost: string): string {
  const lines = ['# Broker accounts of callback-relay, one per role (docs/security.md, "Broker accounts and permissions").'];
  for (const account of accounts) {
    lines.push(`# ${account.role}: ${ROLE_PURPOSE[account.role]}`);
    for (const args of rabbitmqctlCommands([account], vhost))
      lines.push(['rabbitmqctl', ...args].map((word, i) => (i === 0 ? word : shellWord(word))).join(' '));
  }
  return `${lines.join('\n')}\n`;
}

/**
 * RabbitMQ's password hash (rabbit_password_hashing_sha256): base64 of a 4-byte salt followed by
 * SHA-256(salt ‖ password): https://www.rabbitmq.com/docs/passwords#computing-password-hash
 */
export function passwordHash(password: string, salt: Buffer = randomBytes(4)): string {
  const digest = createHash('sha256')
    .update(Buffer.concat([salt, Buffer.from(password, 'utf8')]))
    .digest();
  return Buffer.concat([salt, digest]).toString('base64');
}

export interface Definitions {
  users: Array<{ name: string; password_hash: string; hashing_algorithm: 'rabbit_password_hashing_sha256'; tags: string[] }>;
  vhosts: Array<{ name: string }>;
  permissions: Array<{ user: string; vhost: string; configure: string; write: string; read: string }>;
}

/** A definitions document with the users, the vhost and the permissions, for `rabbitmqctl import_definitions` or load_definitions. */
export function definitions(accounts: readonly AccountWithPassword[], vhost: string, salt?: () => Buffer): Definitions {
  return {
    users: accounts.map(({ user, password }) => ({
      name: user,
      password_hash: passwordHash(password, salt?.()),
      hashing_algorithm: 'rabbit_password_hashing_sha256',
      tags: [],
    })),
    vhosts: [{ name: vhost }],
    permissions: accounts.map(({ user, permissions }) => ({ user, vhost, ...permissions })),
  };
}
