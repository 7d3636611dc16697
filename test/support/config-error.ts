import { loadConfig } from '../../src/config/load-config.js';
import { isRelayError, type RelayError } from '../../src/errors.js';

/** The RelayError loadConfig throws for `env`; fails the test if it does not throw one. */
export function configError(env: NodeJS.ProcessEnv): RelayError {
  try {
    loadConfig(env);
  } catch (error) {
    if (isRelayError(error)) return error;
    throw error;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}
