import { readFileSync } from 'node:fs';
import type { RelayConfig } from '../config/load-config.js';
import { RelayError } from '../errors.js';
import { signCallback, type SignedHeaders } from './sign-callback.js';
import { loadSigningSecrets, parseSigningSecrets, type SigningKey } from '../formats/signing-secrets.js';

/** Signs one attempt for `target` (an origin), or returns `undefined` when no secret applies to it. */
export type Signer = (target: string, id: string, timestampSeconds: number, body: string) => SignedHeaders | undefined;

/**
 * The signer of a configuration: SIGNING_SECRET / SIGNING_SECRET_FILE for every target, and
 * SIGNING_TARGET_SECRETS_FILE (a JSON object `{ "https://origin": "whsec_… whsec_…" }`) for targets
 * with secrets of their own. Secrets are read once, at startup; any problem is a `CR_ERR_CONFIG`
 * that names the setting, never the secret.
 */
export function createSigner(
  config: Pick<RelayConfig, 'signingSecret' | 'signingSecretFile' | 'signingTargetSecretsFile'>,
): Signer | undefined {
  const shared = loadSigningSecrets({ value: config.signingSecret, file: config.signingSecretFile }, 'SIGNING_SECRET');
  const perTarget = loadTargetSecrets(config.signingTargetSecretsFile);
  if (shared.length === 0 && perTarget.size === 0) return undefined;
  return (target, id, timestampSeconds, body) => {
    const keys = perTarget.get(target) ?? shared;
    return keys.length === 0 ? undefined : signCallback(keys, id, timestampSeconds, body);
  };
}

function loadTargetSecrets(file: string): Map<string, SigningKey[]> {
  const keys = new Map<string, SigningKey[]>();
  if (file === '') return keys;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new RelayError(
      'CR_ERR_CONFIG',
      `SIGNING_TARGET_SECRETS_FILE: cannot read ${file} as JSON (${(error as NodeJS.ErrnoException).code ?? 'invalid JSON'})`,
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new RelayError('CR_ERR_CONFIG', `SIGNING_TARGET_SECRETS_FILE: ${file} must hold a JSON object of origin → secrets`);
  }
  for (const [origin, secrets] of Object.entries(parsed)) {
    let normalised: string;
    try {
      normalised = new URL(origin).origin;
    } catch {
      throw new RelayError(
        'CR_ERR_CONFIG',
        `SIGNING_TARGET_SECRETS_FILE: ${JSON.stringify(origin)} is not an origin such as https://example.com`,
      );
    }
    if (typeof secrets !== 'string')
      throw new RelayError('CR_ERR_CONFIG', `SIGNING_TARGET_SECRETS_FILE: the secrets of ${normalised} must be a string`);
    keys.set(normalised, parseSigningSecrets(secrets, `SIGNING_TARGET_SECRETS_FILE[${normalised}]`));
  }
  return keys;
}
