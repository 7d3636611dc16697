import { describe, it, expect } from 'vitest';
import type { LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { parseCidrList, type AddressPolicy } from '../../../src/http/address-policy.js';
import { ForbiddenTargetError, createGuardedLookup, isForbiddenTargetError } from '../../../src/http/guarded-agent.js';

const DEFAULT: AddressPolicy = { strict: false, allow: [], deny: [] };

/** A resolver answering from a table, in whichever form it was asked for; records the options it got. */
function tableResolver(table: Record<string, LookupAddress[]>, calls: Array<{ all?: boolean }> = []): LookupFunction {
  return (hostname, options, callback) => {
    calls.push({ ...(options.all === undefined ? {} : { all: options.all }) });
    const found = table[hostname];
    if (found === undefined) {
      const error: NodeJS.ErrnoException = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      return (callback as (error: Error) => void)(error);
    }
    if (options.all === true) return callback(null, found);
    const first = found[0] as LookupAddress;
    return callback(null, first.address, first.family);
  };
}

/** Runs a lookup and returns what it called back with. */
function run(lookup: LookupFunction, hostname: string, all: boolean): Promise<{ error: Error | null; result: unknown; family?: number }> {
  return new Promise((resolve) => {
    lookup(hostname, { all, hints: 0 }, (error, result, family) => resolve({ error, result, ...(family === undefined ? {} : { family }) }));
  });
}

const TABLE: Record<string, LookupAddress[]> = {
  'good.test': [{ address: '127.0.0.1', family: 4 }],
  'meta.test': [
    { address: '169.254.169.254', family: 4 },
    { address: 'fe80::a9fe:a9fe', family: 6 },
  ],
  'mixed.test': [
    { address: '169.254.169.254', family: 4 },
    { address: '::1', family: 6 },
    { address: '127.0.0.1', family: 4 },
  ],
};

describe('createGuardedLookup', () => {
  it('passes allowed addresses through in both callback forms', async () => {
    const lookup = createGuardedLookup(DEFAULT, tableResolver(TABLE));
    expect(await run(lookup, 'good.test', true)).toEqual({ error: null, result: [{ address: '127.0.0.1', family: 4 }] });
    expect(await run(lookup, 'good.test', false)).toEqual({ error: null, result: '127.0.0.1', family: 4 });
  });

  it('always asks the resolver for every address', async () => {
    const calls: Array<{ all?: boolean }> = [];
    await run(createGuardedLookup(DEFAULT, tableResolver(TABLE, calls)), 'good.test', false);
    expect(calls).toEqual([{ all: true }]);
  });

  it('fails with ForbiddenTargetError listing every reason when no address is allowed', async () => {
    const { error, result } = await run(createGuardedLookup(DEFAULT, tableResolver(TABLE)), 'meta.test', true);
    expect(result).toBeUndefined();
    expect(error).toBeInstanceOf(ForbiddenTargetError);
    expect(isForbiddenTargetError(error)).toBe(true);
    expect(error?.message).toBe(
      'forbidden target meta.test: 169.254.169.254 is link-local (cloud metadata); fe80::a9fe:a9fe is link-local (cloud metadata)',
    );
  });

  it('drops forbidden addresses and keeps the allowed ones, in order', async () => {
    const lookup = createGuardedLookup(DEFAULT, tableResolver(TABLE));
    expect((await run(lookup, 'mixed.test', true)).result).toEqual([
      { address: '::1', family: 6 },
      { address: '127.0.0.1', family: 4 },
    ]);
    expect(await run(lookup, 'mixed.test', false)).toEqual({ error: null, result: '::1', family: 6 });
  });

  it('applies strict mode and the allow list', async () => {
    const strict = createGuardedLookup({ strict: true, allow: [], deny: [] }, tableResolver(TABLE));
    expect((await run(strict, 'good.test', true)).error?.message).toBe(
      'forbidden target good.test: 127.0.0.1 is loopback, refused in strict mode',
    );
    const allowed = createGuardedLookup(
      { strict: true, allow: parseCidrList('127.0.0.0/8', 'TARGET_ALLOW'), deny: [] },
      tableResolver(TABLE),
    );
    expect((await run(allowed, 'mixed.test', true)).result).toEqual([{ address: '127.0.0.1', family: 4 }]);
  });

  it('passes resolver errors through unchanged', async () => {
    const { error } = await run(createGuardedLookup(DEFAULT, tableResolver(TABLE)), 'missing.test', true);
    expect((error as NodeJS.ErrnoException).code).toBe('ENOTFOUND');
    expect(isForbiddenTargetError(error)).toBe(false);
  });

  it('copes with a resolver that ignores `all` and answers with one address', async () => {
    const single: LookupFunction = (_hostname, _options, callback) => callback(null, '169.254.169.254', 4);
    expect(isForbiddenTargetError((await run(createGuardedLookup(DEFAULT, single), 'x.test', true)).error)).toBe(true);
  });
});

describe('isForbiddenTargetError', () => {
  const refused = new ForbiddenTargetError('meta.test', ['169.254.169.254 is link-local (cloud metadata)']);

  it('finds the code on the error, in its cause chain and in an AggregateError', () => {
    expect(isForbiddenTargetError(refused)).toBe(true);
    expect(isForbiddenTargetError(new Error('outer', { cause: new Error('middle', { cause: refused }) }))).toBe(true);
    expect(isForbiddenTargetError(new AggregateError([new Error('x'), refused]))).toBe(true);
    expect(isForbiddenTargetError({ code: 'CR_ERR_FORBIDDEN_TARGET' })).toBe(true);
  });

  it('is false for other errors, non-errors and cyclic causes', () => {
    const cyclic: Error & { cause?: unknown } = new Error('loop');
    cyclic.cause = cyclic;
    for (const value of [new Error('ECONNREFUSED'), undefined, null, 'CR_ERR_FORBIDDEN_TARGET', cyclic]) {
      expect(isForbiddenTargetError(value)).toBe(false);
    }
  });
});
