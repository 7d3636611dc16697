import type { FastifyInstance } from 'fastify';
import type { ReplaySelector } from '../dlq/select-for-replay.js';
import { RelayError } from '../errors.js';
import { formOf, operatorOf } from './console-server.js';
import { href } from './html.js';
import type { ConsoleContext } from './page-routes.js';

/**
 * The console's actions: POSTs only (checked for their CSRF token by the app's hook), each done through
 * ConsoleActions (logged there with the operator's name and what it touched), then a redirect (303) to
 * the page the action belongs to, which says what was done.
 */
export function registerActions(app: FastifyInstance, context: ConsoleContext): void {
  const { actions, config } = context;

  app.post('/targets/pause', async (request, reply) => {
    await actions.pause(operatorOf(request).name, required(formOf(request), 'origin'));
    return reply.redirect(href('/targets', { done: 'paused' }), 303);
  });
  app.post('/targets/resume', async (request, reply) => {
    await actions.resume(operatorOf(request).name, required(formOf(request), 'origin'));
    return reply.redirect(href('/targets', { done: 'resumed' }), 303);
  });
  app.post('/callback/cancel', async (request, reply) => {
    const id = required(formOf(request), 'id');
    await actions.cancel(operatorOf(request).name, id);
    return reply.redirect(href('/callback', { id, done: 'canceled' }), 303);
  });
  app.post('/dead-letters/replay', async (request, reply) => {
    const form = formOf(request);
    const result = await actions.replay(operatorOf(request).name, replaySelector(form), config.consoleDeadScan);
    const done = { done: 'replayed', n: result.replayed, kept: result.kept };
    // One callback replayed: its timeline, where its delivery will show.
    const one = form.getAll('id').length === 1 ? form.get('id') : null;
    return reply.redirect(one === null ? href('/dead-letters', done) : href('/callback', { id: one, ...done }), 303);
  });
  app.post('/dead-letters/purge', async (request, reply) => {
    const count = Number(required(formOf(request), 'count'));
    if (!Number.isSafeInteger(count) || count < 1) throw new RelayError('CR_ERR_USAGE', 'count: must be a whole number of at least 1', { field: 'count' });
    const purged = await actions.purge(operatorOf(request).name, count);
    return reply.redirect(href('/dead-letters', { done: 'purged', n: purged }), 303);
  });
}

/**
 * What a replay form selects: `id` fields (one message, or the ticked ones), a group (`group`,
 * `origin`, `reason`), or `all`. Nothing selected is refused rather than read as everything.
 */
export function replaySelector(form: URLSearchParams): ReplaySelector {
  const ids = form.getAll('id').filter((id) => id !== '');
  if (ids.length > 0) return { kind: 'ids', ids };
  if (form.get('group') === '1') return { kind: 'group', origin: form.get('origin') || null, reason: required(form, 'reason') };
  if (form.get('all') === '1') return { kind: 'all' };
  throw new RelayError('CR_ERR_USAGE', 'nothing selected to replay: tick messages, or replay a group', { field: 'id' });
}

function required(form: URLSearchParams, name: string): string {
  const value = form.get(name);
  if (value === null || value.trim() === '') throw new RelayError('CR_ERR_USAGE', `${name}: missing`, { field: name });
  return value.trim();
}
