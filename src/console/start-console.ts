import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { RelayConfig } from '../config/load-config.js';
import { RelayError } from '../errors.js';
import { parseConsoleTokens } from '../formats/console-tokens.js';
import type { Logger } from '../logger.js';
import { listenOrigin } from '../http/listen-origin.js';
import { topologyNames } from '../topology/topology-names.js';
import { registerActions } from './action-routes.js';
import { ConsoleAuth } from './auth.js';
import { consoleActions } from './console-actions.js';
import { buildConsoleApp } from './console-server.js';
import { startLiveState } from './live-state.js';
import { LOGIN_THROTTLE, LoginThrottle, type ThrottleLimits } from './login-throttle.js';
import { registerPages } from './page-routes.js';
import { TOKEN_RULE, weakTokenProblem } from './token-strength.js';

export interface RunningConsole {
  /** e.g. http://127.0.0.1:8081 */
  origin: string;
  /** The address and port it listens on. */
  host: string;
  port: number;
  app: FastifyInstance;
  close(): Promise<void>;
}

export interface ConsoleStartOptions {
  /** Overrides CONSOLE_PORT (0 picks a free one). */
  port?: number;
  clock?: () => number;
  /** Overrides LOGIN_THROTTLE (tests). */
  throttle?: ThrottleLimits;
}

/**
 * Starts one console replica on CONSOLE_HOST:CONSOLE_PORT: it follows P.history and P.control into
 * memory and serves the pages. Throws `CR_ERR_CONFIG` naming CONSOLE_TOKENS when no operator token is
 * set, or when a token is too weak to guess-proof (token-strength.ts; the message names the token's
 * name, never the token): the console moves and deletes callbacks.
 */
export async function startConsole(config: RelayConfig, logger: Logger, options: ConsoleStartOptions = {}): Promise<RunningConsole> {
  const { port = config.consolePort, clock = Date.now } = options;
  const tokens = parseConsoleTokens(config.consoleTokens);
  if (tokens.length === 0) {
    throw new RelayError(
      'CR_ERR_CONFIG',
      'invalid configuration:\n  CONSOLE_TOKENS (consoleTokens): the console needs at least one name:token entry: value was ""',
    );
  }
  for (const { name, token } of tokens) {
    const problem = weakTokenProblem(token);
    if (problem !== undefined) {
      throw new RelayError(
        'CR_ERR_CONFIG',
        `invalid configuration:\n  CONSOLE_TOKENS (consoleTokens): the token of ${name} is too weak (${problem}): ${TOKEN_RULE}`,
        { field: 'CONSOLE_TOKENS' },
      );
    }
  }
  const names = topologyNames(config.topologyPrefix, config.lanes, config.orderedShards);
  const live = startLiveState(config, names, logger, clock);
  const auth = new ConsoleAuth(tokens, clock, live.sessions);
  const actions = consoleActions(config, names, logger, live.control, live.sessions, clock);
  const throttle = new LoginThrottle(options.throttle ?? LOGIN_THROTTLE, clock);
  const app = buildConsoleApp(auth, logger, {
    throttle,
    endSession: (operator) => actions.endSession(operator.name, operator.sessionId ?? '', operator.expires ?? clock()),
  });
  const context = { config, names, live, actions, auth, clock };
  registerPages(app, context);
  registerActions(app, context);
  try {
    await app.listen({ port, host: config.consoleHost });
  } catch (error) {
    await live.close();
    throw error;
  }
  const { port: bound, address } = app.server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  // Logged before the streams are read, so it is the first line whatever they log.
  logger.info(
    { host: address, port: bound, url: `http://${host}:${bound}`, operators: tokens.map((t) => t.name), windowMs: config.consoleWindow },
    `console listening on http://${host}:${bound}`,
  );
  live.follow();
  return {
    origin: listenOrigin(address, bound),
    host: address,
    port: bound,
    app,
    async close() {
      await app.close();
      await live.close();
    },
  };
}
