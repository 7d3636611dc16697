import { readFileSync } from 'node:fs';
import { RelayError } from '../errors.js';

/** A plain JSON object (not an array, not null). */
export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `CR_ERR_CONFIG` naming the bad field (a setting, or an entry of a setting's file). */
export function configError(message: string, field: string, cause?: unknown): RelayError {
  return new RelayError('CR_ERR_CONFIG', message, { field, ...(cause === undefined ? {} : { cause }) });
}

/**
 * A settings file's JSON object (`where` names the setting and the file, `holds` what the object
 * maps). Throws `CR_ERR_CONFIG` when it cannot be read, is not JSON or not an object.
 */
export function readJsonObject(file: string, setting: string, where: string, holds: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? `invalid JSON: ${(error as Error).message}`;
    throw configError(`${where}: cannot read the file as JSON (${reason})`, setting, error);
  }
  if (!isObject(parsed)) throw configError(`${where}: must hold a JSON object of ${holds}`, setting);
  return parsed;
}
