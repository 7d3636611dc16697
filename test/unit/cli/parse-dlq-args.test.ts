import { describe, expect, it } from 'vitest';
import { DEFAULT_LIST_LIMIT, parseDlqArgs } from '../../../src/cli/parse-dlq-args.js';
import { UsageError } from '../../../src/cli/usage-error.js';

const usageError = (argv: string[]): string => {
  try {
    parseDlqArgs(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    expect(error).toMatchObject({ code: 'CR_ERR_USAGE' });
    return (error as Error).message;
  }
  throw new Error(`no usage error for ${argv.join(' ')}`);
};

describe('parseDlqArgs', () => {
  it('list: default limit 50, --limit, --json', () => {
    expect(DEFAULT_LIST_LIMIT).toBe(50);
    expect(parseDlqArgs(['list'])).toEqual({ action: 'list', limit: 50, json: false });
    expect(parseDlqArgs(['list', '--limit', '5', '--json'])).toEqual({ action: 'list', limit: 5, json: true });
    expect(parseDlqArgs(['list', '--limit=7'])).toEqual({ action: 'list', limit: 7, json: false });
  });

  it('replay: exactly one selector', () => {
    expect(parseDlqArgs(['replay', '--id', 'a', '--id', 'b'])).toEqual({
      action: 'replay',
      selector: { kind: 'ids', ids: ['a', 'b'] },
      limit: undefined,
    });
    expect(parseDlqArgs(['replay', '--reason', 'rejected', '--limit', '10'])).toEqual({
      action: 'replay',
      selector: { kind: 'reason', reason: 'rejected' },
      limit: 10,
    });
    expect(parseDlqArgs(['replay', '--all'])).toEqual({ action: 'replay', selector: { kind: 'all' }, limit: undefined });
    expect(usageError(['replay'])).toMatch(/--id ID \(repeatable\), --reason REASON or --all/);
    expect(usageError(['replay', '--all', '--reason', 'rejected'])).toMatch(/only one of .*--reason and --all/);
    expect(usageError(['replay', '--reason', ''])).toMatch(/^--reason/);
    expect(usageError(['replay', '--id', ''])).toMatch(/^--id/);
  });

  it('purge: --yes or -y', () => {
    expect(parseDlqArgs(['purge'])).toEqual({ action: 'purge', yes: false });
    expect(parseDlqArgs(['purge', '--yes'])).toEqual({ action: 'purge', yes: true });
    expect(parseDlqArgs(['purge', '-y'])).toEqual({ action: 'purge', yes: true });
  });

  it('help in every spelling', () => {
    for (const argv of [[], ['help'], ['--help'], ['-h'], ['list', '--help'], ['replay', '-h']])
      expect(parseDlqArgs(argv)).toEqual({ action: 'help' });
  });

  it('names the flag at fault', () => {
    expect(usageError(['list', '--limit', '0'])).toMatch(/^--limit: must be a whole number of at least 1, got "0"/);
    expect(usageError(['list', '--limit', 'ten'])).toMatch(/^--limit/);
    expect(usageError(['list', '--limit', '1.5'])).toMatch(/^--limit/);
    expect(usageError(['list', '--verbose'])).toMatch(/--verbose/);
    expect(usageError(['list', 'extra'])).toMatch(/extra/);
    expect(usageError(['replay', '--id'])).toMatch(/--id/);
    expect(usageError(['requeue'])).toMatch(/unknown dlq command "requeue"/);
  });
});
