import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { RelayConfig } from '../config/load-config.js';
import { RelayError } from '../errors.js';
import { parseConsoleTokens } from '../formats/console-tokens.js';
import type { Logger } from '../logger.js';
import { topologyNames } from '../topology/topology-names.js';
import { registerActions } from './action-routes.js';
import { ConsoleAuth } from './auth.js';
import { consoleActions } from './console-actions.js';
import { buildConsoleApp } from './console-server.js';
import { startLiveState } from './live-state.js';
import { registerPages } from './page-routes.js';

export interface RunningConsole {
  /** e.g. http://127.0.0.1:8081 */
  origin: string;
  app: FastifyInstance;
  close(): Promise<void>;
}

/**
 * Starts one console replica on CONSOLE_PORT (`port` overrides it; 0 picks a free one): it follows
 * P.history and P.control into memory and serves the pages. Throws `CR_ERR_CONFIG` naming
 * CONSOLE_TOKENS when no operator token is set: the console moves and deletes callbacks.
 */
export async function startConsole(config: RelayConfig, logger: Logger, port = config.consolePort, clock: () => number = Date.now): Promise<RunningConsole> {
  const tokens = parseConsoleTokens(config.consoleTokens);
  if (tokens.length === 0) {
    throw new RelayError('CR_ERR_CONFIG', 'invalid configuration:\n  CONSOLE_TOKENS (consoleTokens): the console needs at least one name:token entry: value was ""');
  }
  const names = topologyNames(config.topologyPrefix, config.lanes);
  const live = startLiveState(config, names, logger, clock);
  const auth = new ConsoleAuth(tokens, clock);
  const actions = consoleActions(config, names, logger, live.control, clock);
  const app = buildConsoleApp(auth, logger);
  const context = { config, names, live, actions, auth, clock };
  registerPages(app, context);
  registerActions(app, context);
  try {
    await app.listen({ port, host: '0.0.0.0' });
  } catch (error) {
    await live.close();
    throw error;
  }
  const { port: bound } = app.server.address() as AddressInfo;
  logger.info({ port: bound, operators: tokens.map((t) => t.name), windowMs: config.consoleWindow }, 'console listening');
  return {
    origin: `http://127.0.0.1:${bound}`,
    app,
    async close() {
      await app.close();
      await live.close();
    },
  };
}
