import { describe, expect, it } from 'vitest';
import { accountsOutput, parseAccountsArgs, vhostOf } from '../../../src/cli/accounts-command.js';

describe('callback-relay accounts', () => {
  it('parses its flags, defaulting to rabbitmqctl lines', () => {
    expect(parseAccountsArgs([])).toEqual({
      action: 'print',
      prefix: undefined,
      vhost: undefined,
      delayMode: undefined,
      format: 'rabbitmqctl',
    });
    expect(
      parseAccountsArgs(['--prefix', 'orders', '--vhost', 'relay', '--delay-mode', 'queues', '--format', 'definitions']),
    ).toMatchObject({ prefix: 'orders', vhost: 'relay', delayMode: 'queues', format: 'definitions' });
    expect(parseAccountsArgs(['--help']).action).toBe('help');
  });

  it.each([
    [['--format', 'yaml'], /--format: "yaml"/],
    [['--delay-mode', 'fast'], /--delay-mode: "fast"/],
    [['--prefix', 'a b'], /--prefix: "a b"/],
    [['--vhost', ''], /--vhost: ""/],
    [['--nope'], /nope/],
  ])('a bad flag is CR_ERR_USAGE naming the flag and the value: %j', (argv, message) => {
    expect(() => parseAccountsArgs(argv)).toThrow(
      expect.objectContaining({ code: 'CR_ERR_USAGE', message: expect.stringMatching(message) }),
    );
  });

  it('the vhost of AMQP_URL, decoded; / without one', () => {
    expect(vhostOf('amqp://u:p@h:5672')).toBe('/');
    expect(vhostOf('amqp://u:p@h:5672/')).toBe('/');
    expect(vhostOf('amqp://u:p@h:5672/relay')).toBe('relay');
    expect(vhostOf('amqp://u:p@h:5672/%2F')).toBe('/');
  });

  it('passwords from ACCOUNT_PASSWORD_<ROLE>, else generated afresh, never a fixed default', () => {
    const defaults = { prefix: 'p', vhost: '/', delayMode: 'auto' as const };
    let n = 0;
    const output = accountsOutput(
      { action: 'print', format: 'rabbitmqctl' },
      defaults,
      { ACCOUNT_PASSWORD_PRODUCER: 'from-env' },
      () => `generated-${(n += 1)}`,
    );
    expect(output).toContain('rabbitmqctl add_user p-producer from-env\n');
    expect(output).toContain('rabbitmqctl add_user p-worker generated-');
    expect(n).toBe(4);
    const twice = [1, 2].map(() => accountsOutput({ action: 'print', format: 'definitions' }, defaults, {}));
    expect(JSON.parse(twice[0]!).users).toHaveLength(5);
    expect(twice[0]).not.toEqual(twice[1]);
  });
});
