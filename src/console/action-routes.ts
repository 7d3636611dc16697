import type { FastifyInstance } from 'fastify';
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
  const { actions } = context;

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
    const { ids, includeCanceled } = shownSelection(form);
    const result = await actions.replay(operatorOf(request).name, ids, includeCanceled);
    const done = { done: 'replayed', n: result.replayed, skipped: result.skippedCanceled };
    // One callback replayed: its timeline, where its delivery will show.
    const one = ids.length === 1 && result.replayed === 1 ? ids[0] : undefined;
    return reply.redirect(one === undefined ? href('/dead-letters', done) : href('/callback', { id: one, ...done }), 303);
  });
  app.post('/dead-letters/purge', async (request, reply) => {
    const { ids } = shownSelection(formOf(request));
    const purged = await actions.purge(operatorOf(request).name, ids);
    return reply.redirect(href('/dead-letters', { done: 'purged', n: purged }), 303);
  });
}

/**
 * What a purge or replay form names: the ids of the messages its page showed (`id`, one per message),
 * and, where the page wrote them all (`count`: a group, all shown, a purge), how many it showed, so a
 * form cut short is refused rather than acted on in part. Ticked messages (`selected=1`) are chosen
 * one by one, so a cancelled callback among them is replayed; a group or all shown skip those unless
 * the form says `canceled=1`. Nothing named is refused rather than read as everything. Pure.
 */
export function shownSelection(form: URLSearchParams): { ids: string[]; includeCanceled: boolean } {
  const ids = form.getAll('id').filter((id) => id !== '');
  if (ids.length === 0) throw new RelayError('CR_ERR_USAGE', 'nothing selected: tick messages, or replay a group', { field: 'id' });
  const selected = form.get('selected') === '1';
  if (!selected) {
    const count = Number(form.get('count'));
    if (!Number.isSafeInteger(count) || count !== ids.length) {
      throw new RelayError(
        'CR_ERR_USAGE',
        `count: the form names ${ids.length} message(s) but says ${JSON.stringify(form.get('count') ?? '')} were shown`,
        { field: 'count' },
      );
    }
  }
  return { ids, includeCanceled: selected || form.get('canceled') === '1' };
}

function required(form: URLSearchParams, name: string): string {
  const value = form.get(name);
  if (value === null || value.trim() === '') throw new RelayError('CR_ERR_USAGE', `${name}: missing`, { field: name });
  return value.trim();
}
