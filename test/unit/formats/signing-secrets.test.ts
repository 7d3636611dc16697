import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { isRelayError, type RelayError } from '../../../src/errors.js';
import { loadSigningSecrets, parseSigningSecrets } from '../../../src/formats/signing-secrets.js';

// The Standard Webhooks reference secret (standard-webhooks/standard-webhooks, libraries/*/ tests).
const SPEC_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const SPEC_KEY = Buffer.from('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'base64');
const OTHER_SECRET = `whsec_${randomBytes(32).toString('base64')}`;

/** Runs `fn`, expects a CR_ERR_CONFIG naming `field`, and returns it. */
function configError(fn: () => unknown, field: string): RelayError {
  try {
    fn();
  } catch (error) {
    expect(isRelayError(error, 'CR_ERR_CONFIG')).toBe(true);
    const relayError = error as RelayError;
    expect(relayError.field).toBe(field);
    expect(relayError.message.startsWith(`${field}: `)).toBe(true);
    return relayError;
  }
  throw new Error('expected CR_ERR_CONFIG, nothing was thrown');
}

/** No 6-character run of the secret's key material appears in the text. */
function expectNoLeak(text: string, secret: string): void {
  const material = secret.replace(/^whsec_/, '');
  for (let start = 0; start + 6 <= material.length; start += 1) expect(text).not.toContain(material.slice(start, start + 6));
}

describe('parseSigningSecrets', () => {
  it('decodes the base64 after whsec_ into the HMAC key', () => {
    const [key, ...rest] = parseSigningSecrets(SPEC_SECRET, 'signingSecrets');
    expect(rest).toEqual([]);
    expect(key?.key.equals(SPEC_KEY)).toBe(true);
    expect(key?.key.length).toBe(24);
  });

  it('splits several secrets on any whitespace, keeping their order (rotation)', () => {
    const keys = parseSigningSecrets(`  ${OTHER_SECRET}\n\t${SPEC_SECRET}  `, 'signingSecrets');
    expect(keys.map((key) => key.key.toString('base64'))).toEqual([OTHER_SECRET.slice(6), SPEC_KEY.toString('base64')]);
    expect(keys.map((key) => key.label)).toEqual(['signingSecrets secret 1 of 2 (32 bytes)', 'signingSecrets secret 2 of 2 (24 bytes)']);
  });

  it('accepts base64 with and without padding', () => {
    const key = randomBytes(32);
    const padded = key.toString('base64');
    expect(padded.endsWith('=')).toBe(true);
    expect(parseSigningSecrets(`whsec_${padded}`, 'f')[0]?.key.equals(key)).toBe(true);
    expect(parseSigningSecrets(`whsec_${padded.replace(/=+$/, '')}`, 'f')[0]?.key.equals(key)).toBe(true);
  });

  it('never exposes the key when the parsed keys are logged or serialised', () => {
    const keys = parseSigningSecrets(SPEC_SECRET, 'signingSecrets');
    expectNoLeak(JSON.stringify(keys), SPEC_SECRET);
    expectNoLeak(inspect(keys, { depth: 5 }), SPEC_SECRET);
    expect(Object.isFrozen(keys[0])).toBe(true);
  });

  it('refuses a secret without the whsec_ prefix by default, without echoing it', () => {
    const bare = SPEC_SECRET.slice(6);
    const error = configError(() => parseSigningSecrets(bare, 'signingSecrets'), 'signingSecrets');
    expect(error.message).toContain('must start with "whsec_"');
    expect(error.message).toContain('secret 1 of 1');
    expectNoLeak(error.message, bare);
  });

  it('accepts the bare base64 when requirePrefix is false (as receivers may hold it)', () => {
    expect(parseSigningSecrets(SPEC_SECRET.slice(6), 'secret', { requirePrefix: false })[0]?.key.equals(SPEC_KEY)).toBe(true);
  });

  it.each([
    ['a character outside base64', 'whsec_MfKQ9r8GKYqrTwjUPD8I!PZIo2LaLaSw'],
    ['the URL-safe alphabet', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLa-_'],
    ['a length no base64 has', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwA'],
    ['misplaced padding', 'whsec_MfKQ9r8GKYqrTwjUPD8I=LPZIo2LaLaSw'],
    ['padding on a length that is not a multiple of 4', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwAB='],
  ])('refuses %s, naming the field and position but not the secret', (_, secret) => {
    const error = configError(() => parseSigningSecrets(`${SPEC_SECRET} ${secret}`, 'signingSecrets'), 'signingSecrets');
    expect(error.message).toContain('secret 2 of 2');
    expect(error.message).toContain('not valid standard base64');
    expectNoLeak(error.message, secret);
  });

  it('refuses whsec_ with nothing after it', () => {
    expect(configError(() => parseSigningSecrets('whsec_', 'signingSecrets'), 'signingSecrets').message).toContain(
      'nothing after "whsec_"',
    );
  });

  it('refuses empty or blank text', () => {
    for (const text of ['', '   ', '\n']) {
      expect(configError(() => parseSigningSecrets(text, 'signingSecrets'), 'signingSecrets').message).toContain('no signing secret');
    }
  });

  it('refuses a key shorter than the 24 bytes the spec requires', () => {
    const short = `whsec_${randomBytes(16).toString('base64')}`;
    const error = configError(() => parseSigningSecrets(short, 'signingSecrets'), 'signingSecrets');
    expect(error.message).toContain('decodes to 16 bytes');
    expectNoLeak(error.message, short);
  });

  it('shows no key material even for a secret pasted into the wrong place', () => {
    const hex = randomBytes(32).toString('hex');
    const error = configError(() => parseSigningSecrets(hex, 'signingSecrets'), 'signingSecrets');
    expect(error.message).toContain('without prefix, 64 characters');
    expectNoLeak(error.message, hex);
  });
});

describe('loadSigningSecrets', () => {
  const dir = mkdtempSync(join(tmpdir(), 'signing-secrets-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, content: string): string => {
    const path = join(dir, name);
    writeFileSync(path, content, { mode: 0o600 });
    return path;
  };

  it('returns no keys (signing off) when neither a value nor a file is set', () => {
    expect(loadSigningSecrets({}, 'signingSecrets')).toEqual([]);
    expect(loadSigningSecrets({ value: '', file: '' }, 'signingSecrets')).toEqual([]);
    expect(loadSigningSecrets({ value: '  ', file: undefined }, 'signingSecrets')).toEqual([]);
  });

  it('parses the value when no file is set', () => {
    expect(loadSigningSecrets({ value: SPEC_SECRET }, 'signingSecrets')[0]?.key.equals(SPEC_KEY)).toBe(true);
  });

  it('reads a file, trimming it, one or more secrets per line', () => {
    const path = write('two', `${OTHER_SECRET}\n${SPEC_SECRET}\n`);
    const keys = loadSigningSecrets({ file: path }, 'signingSecrets');
    expect(keys).toHaveLength(2);
    expect(keys[1]?.key.equals(SPEC_KEY)).toBe(true);
    expect(loadSigningSecrets({ value: '', file: write('one', `\n  ${SPEC_SECRET}  \n`) }, 'signingSecrets')).toHaveLength(1);
  });

  it('names the file when it cannot be read', () => {
    const path = join(dir, 'does-not-exist');
    const error = configError(() => loadSigningSecrets({ file: path }, 'signingSecrets'), 'signingSecrets');
    expect(error.message).toContain(JSON.stringify(path));
    expect(error.message).toContain('ENOENT');
    expect(error.cause).toBeDefined();
    expect(configError(() => loadSigningSecrets({ file: dir }, 'signingSecrets'), 'signingSecrets').message).toContain('EISDIR');
  });

  it('refuses an empty file', () => {
    const path = write('empty', ' \n');
    const error = configError(() => loadSigningSecrets({ file: path }, 'signingSecrets'), 'signingSecrets');
    expect(error.message).toContain('is empty');
    expect(error.message).toContain(JSON.stringify(path));
  });

  it('refuses a bad secret in a file, naming the file but not the secret', () => {
    const bad = `whsec_${randomBytes(30).toString('base64')}!`;
    const path = write('bad', `${SPEC_SECRET} ${bad}`);
    const error = configError(() => loadSigningSecrets({ file: path }, 'signingSecrets'), 'signingSecrets');
    expect(error.message).toContain(`secret 2 of 2`);
    expect(error.message).toContain(JSON.stringify(path));
    expectNoLeak(error.message, bad);
  });

  it('refuses both a value and a file, rather than silently preferring one', () => {
    const path = write('both', SPEC_SECRET);
    const error = configError(() => loadSigningSecrets({ value: SPEC_SECRET, file: path }, 'signingSecrets'), 'signingSecrets');
    expect(error.message).toContain('not both');
    expectNoLeak(error.message, SPEC_SECRET);
  });
});
