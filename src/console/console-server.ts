import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { isRelayError } from '../errors.js';
import type { Logger } from '../logger.js';
import { loadAssets } from './assets.js';
import { ConsoleAuth, readCookie, SESSION_COOKIE, SESSION_MS, type Operator } from './auth.js';
import { html, type Html } from './html.js';
import { layout } from './pages/layout.js';
import { loginPage } from './pages/login-page.js';
import { LOGIN_THROTTLE, LoginThrottle, retryAfterSeconds, type Throttled } from './login-throttle.js';
import { safeNext } from './safe-next.js';

/**
 * No script but the console's own files, no inline script or style, no framing, forms only to itself:
 * a callback body shown on a page can never run (https://developer.mozilla.org/docs/Web/HTTP/CSP).
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** Paths served without a login. */
const OPEN = new Set(['/login', '/healthz']);

/** Largest form body: a replay of a selection posts its ids. */
const FORM_BYTES = 1_048_576;

const operators = new WeakMap<FastifyRequest, Operator>();

/** The logged-in operator of a request that passed the authentication hook. */
export function operatorOf(request: FastifyRequest): Operator {
  const operator = operators.get(request);
  if (operator === undefined) throw new Error('no operator on an authenticated route');
  return operator;
}

/** The fields of a posted form. */
export const formOf = (request: FastifyRequest): URLSearchParams =>
  request.body instanceof URLSearchParams ? request.body : new URLSearchParams();

/** Sends a page. */
export const sendPage = (reply: FastifyReply, page: Html, status = 200): FastifyReply =>
  reply.code(status).type('text/html; charset=utf-8').send(page.text);

export interface ConsoleAppOptions {
  /** Failed logins and bearer tokens, per client address and in all (default: LOGIN_THROTTLE on the wall clock). */
  throttle?: LoginThrottle;
  /** Ends a session on every replica (a logout); without it a logout only clears the cookie. */
  endSession?: (operator: Operator) => Promise<void>;
}

/**
 * The console's fastify app without its pages: security headers on every answer, assets, login and
 * logout, and the hooks that make every other route need an operator (session cookie or bearer
 * token) and every POST a valid CSRF token. Wrong tokens, posted or sent as bearer, are counted per
 * client address and in all (login-throttle.ts): past the count the answer is 429 with Retry-After.
 * Errors become an escaped page with their stable code.
 */
export function buildConsoleApp(auth: ConsoleAuth, logger: Logger, options: ConsoleAppOptions = {}): FastifyInstance {
  // No proxy is trusted: request.ip is the peer's address, which a client cannot choose by a header.
  const app = Fastify({ logger: false, bodyLimit: FORM_BYTES, trustProxy: false });
  const assets = loadAssets();
  const throttle = options.throttle ?? new LoginThrottle(LOGIN_THROTTLE, Date.now);
  /** Counts a wrong token; the failure that reaches a limit is logged once, with fields to alert on. */
  const failed = (client: string, via: 'form' | 'bearer'): void => {
    logger.warn({ event: 'console.login.failed', client, via }, 'console: a login with an unknown token was refused');
    const earned = throttle.fail(client);
    if (earned !== undefined) {
      logger.warn(
        {
          event: 'console.login.throttled',
          scope: earned.scope,
          client,
          retryAfterSeconds: retryAfterSeconds(earned),
          limit: earned.scope === 'client' ? throttle.limits.perClient : throttle.limits.global,
          windowMs: throttle.limits.windowMs,
        },
        earned.scope === 'client'
          ? 'console: too many failed logins from one address; its logins are refused for a while'
          : 'console: too many failed logins in all; every login is refused for a while',
      );
    }
  };
  const refuse = (reply: FastifyReply, throttled: Throttled): FastifyReply => {
    const seconds = retryAfterSeconds(throttled);
    const who = throttled.scope === 'client' ? 'from this address' : 'in all';
    reply.header('retry-after', String(seconds));
    return sendPage(
      reply,
      layout(
        { title: 'Too many attempts' },
        html`<p class="notice error" id="throttled">Too many failed logins ${who}: try again in ${seconds} s.</p>`,
      ),
      429,
    );
  };
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) =>
    done(null, new URLSearchParams(String(body))),
  );

  app.addHook('onRequest', async (request, reply) => {
    reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
    reply.header('x-content-type-options', 'nosniff');
    reply.header('x-frame-options', 'DENY');
    reply.header('referrer-policy', 'no-referrer');
    reply.header('cache-control', 'no-store');
    const path = request.url.split('?')[0] ?? '/';
    if (OPEN.has(path) || path.startsWith('/assets/')) return;
    let bearer: Operator | undefined;
    if (request.headers.authorization !== undefined) {
      // A bearer token is a login attempt too: counted and refused as the form's are.
      const throttled = throttle.check(request.ip);
      if (throttled !== undefined) return refuse(reply, throttled);
      bearer = auth.fromBearer(request.headers.authorization);
      if (bearer === undefined) failed(request.ip, 'bearer');
    }
    const operator = bearer ?? auth.fromSession(readCookie(request.headers.cookie, SESSION_COOKIE));
    if (operator === undefined) {
      if (request.method === 'GET') return reply.redirect(`/login?next=${encodeURIComponent(request.url)}`, 303);
      return reply.code(401).type('text/plain').send('log in first: a session cookie or Authorization: Bearer <token>');
    }
    operators.set(request, operator);
  });
  app.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'POST' || !operators.has(request)) return;
    if (!auth.csrfOk(operatorOf(request), formOf(request).get('csrf') ?? undefined)) {
      logger.warn({ by: operatorOf(request).name, path: request.url }, 'console: a POST without a valid CSRF token was refused');
      return sendPage(
        reply,
        layout(
          { title: 'Refused' },
          html`<p>This form is stale or did not come from the console (CSRF token missing or wrong). <a href="/">Back</a></p>`,
        ),
        403,
      );
    }
  });

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get<{ Params: { name: string } }>('/assets/:name', async (request, reply) => {
    const asset = assets.get(request.params.name);
    if (asset === undefined) return reply.code(404).type('text/plain').send('not found');
    return reply.header('cache-control', 'public, max-age=3600').type(asset.type).send(asset.body);
  });
  app.get<{ Querystring: { next?: string; failed?: string } }>('/login', async (request, reply) =>
    sendPage(reply, loginPage(request.query.failed === '1', safeNext(request.query.next))),
  );
  app.post('/login', async (request, reply) => {
    const throttled = throttle.check(request.ip);
    if (throttled !== undefined) return refuse(reply, throttled);
    const form = formOf(request);
    const entry = auth.byToken(form.get('token') ?? '');
    const next = safeNext(form.get('next'));
    if (entry === undefined) {
      failed(request.ip, 'form');
      return reply.redirect(`/login?failed=1&next=${encodeURIComponent(next)}`, 303);
    }
    throttle.succeed(request.ip);
    // Behind a proxy that ends TLS the console itself sees HTTP: the proxy's header says so. Marking the
    // cookie Secure on its word costs nothing: at worst the cookie is not sent over plain HTTP.
    const secure = request.protocol === 'https' || request.headers['x-forwarded-proto'] === 'https' ? '; Secure' : '';
    reply.header(
      'set-cookie',
      `${SESSION_COOKIE}=${auth.newSession(entry)}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${SESSION_MS / 1000}${secure}`,
    );
    logger.info({ by: entry.name }, 'console: logged in');
    return reply.redirect(next, 303);
  });
  app.post('/logout', async (request, reply) => {
    // The cookie is cleared whatever happens next: this browser is logged out.
    reply.header('set-cookie', `${SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`);
    const operator = operatorOf(request);
    if (operator.via === 'cookie' && options.endSession !== undefined) {
      try {
        await options.endSession(operator);
      } catch (error) {
        const code = isRelayError(error) ? error.code : undefined;
        logger.error(
          { err: (error as Error).message, code, by: operator.name },
          'console: the end of a session was not stored; it stays valid on the other replicas until it expires',
        );
        return sendPage(
          reply,
          layout(
            { title: 'Logged out here only' },
            html`<p class="notice error">Logged out in this browser, but the broker did not store the end of the session${code ? ` [${code}]` : ''}: a copy of its cookie stays valid until it expires. Log in and out again once the broker answers.</p><p><a href="/login">Log in</a></p>`,
          ),
          503,
        );
      }
    }
    return reply.redirect('/login', 303);
  });

  app.setErrorHandler(async (error, request, reply) => {
    const code = isRelayError(error) ? error.code : undefined;
    logger.error({ err: (error as Error).message, code, path: request.url }, 'console: request failed');
    const status =
      (error as { statusCode?: number }).statusCode ??
      (code === 'CR_ERR_INVALID_CALLBACK' || code === 'CR_ERR_USAGE' ? 400 : code === 'CR_ERR_DEAD_CHANGED' ? 409 : 500);
    return sendPage(
      reply,
      layout(
        { title: 'Failed' },
        html`<p class="notice error">${code ? `[${code}] ` : ''}${(error as Error).message}</p><p><a href="/">Back</a></p>`,
      ),
      status,
    );
  });
  return app;
}
