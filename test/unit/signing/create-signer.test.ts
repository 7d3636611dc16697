import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.js';
import { createSigner } from '../../../src/signing/create-signer.js';
import { verifyCallback } from '../../../src/signing/verify-callback.js';

const SHARED = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
const OWN = `whsec_${Buffer.alloc(32, 2).toString('base64')}`;
const file = (content: string): string => {
  const path = join(mkdtempSync(join(tmpdir(), 'signer-')), 'secrets.json');
  writeFileSync(path, content);
  return path;
};

describe('createSigner', () => {
  it('is off without secrets', () => {
    expect(createSigner(loadConfig({}))).toBeUndefined();
  });

  it('signs with the shared secret, or a target own secret from SIGNING_TARGET_SECRETS_FILE', () => {
    const sign = createSigner(
      loadConfig({ SIGNING_SECRET: SHARED, SIGNING_TARGET_SECRETS_FILE: file(JSON.stringify({ 'https://own.example:443/x': OWN })) }),
    );
    const verify = (secret: string, headers: Record<string, string> | undefined) =>
      verifyCallback({ secret, headers: headers ?? {}, body: '{}', nowSeconds: 1_000 });
    expect(verify(SHARED, sign?.('https://other.example', 'id-1', 1_000, '{}'))).toEqual({ id: 'id-1', timestamp: 1_000 });
    expect(verify(OWN, sign?.('https://own.example', 'id-2', 1_000, '{}'))).toEqual({ id: 'id-2', timestamp: 1_000 });
    expect(() => verify(SHARED, sign?.('https://own.example', 'id-2', 1_000, '{}'))).toThrow();
  });

  it('reads SIGNING_SECRET_FILE', () => {
    const sign = createSigner(loadConfig({ SIGNING_SECRET_FILE: file(`${SHARED}\n`) }));
    expect(sign?.('https://a.example', 'x', 5, 'b')?.['webhook-signature']).toMatch(/^v1,/);
  });

  it.each([
    ['not JSON', 'nope', /cannot read .* as JSON/],
    ['not an object', '[]', /must hold a JSON object/],
    ['a bad origin', JSON.stringify({ 'not a url': OWN }), /is not an origin/],
    ['a non-string secret', JSON.stringify({ 'https://a.example': 5 }), /must be a string/],
  ])('rejects a per-target file with %s as CR_ERR_CONFIG', (_, content, message) => {
    expect(() => createSigner(loadConfig({ SIGNING_TARGET_SECRETS_FILE: file(content) }))).toThrow(
      expect.objectContaining({ code: 'CR_ERR_CONFIG', message: expect.stringMatching(message) }),
    );
  });
});
