import type { FastifyInstance, FastifyRequest } from 'fastify';
import { amqpUrls } from '../config/amqp-urls.js';
import type { RelayConfig } from '../config/load-config.js';
import { maskHeaders } from '../formats/secret-headers.js';
import type { TopologyNames } from '../topology/topology-names.js';
import type { ConsoleAuth } from './auth.js';
import { lookUpCallback, LOOKUP_RANGES } from './callback-lookup.js';
import { whereNow } from './callback-timeline.js';
import type { ConsoleActions } from './console-actions.js';
import { operatorOf, sendPage } from './console-server.js';
import { filterFromQuery, groupDead, matchesFilter } from './dead-groups.js';
import type { LiveState } from './live-state.js';
import { callbackPage } from './pages/callback-page.js';
import { deadLettersPage, deadMessagePage, purgeConfirmPage } from './pages/dead-letters-page.js';
import { layout, type PageFrame } from './pages/layout.js';
import { html } from './html.js';
import { orderedKeysPage } from './pages/ordered-keys-page.js';
import { overviewPage } from './pages/overview-page.js';
import { targetsPage } from './pages/targets-page.js';
import type { ShardKeys } from './ordered-shards.js';
import { queueDepths, type QueueDepth } from './queue-depths.js';
import { shownBody } from './shown-body.js';
import { healthKeys, targetRows } from './target-rows.js';

export interface ConsoleContext {
  config: Pick<RelayConfig, 'amqpUrl' | 'consoleDeadScan' | 'consoleWindow'>;
  names: TopologyNames;
  live: LiveState;
  actions: ConsoleActions;
  auth: ConsoleAuth;
  clock: () => number;
}

type Query = Record<string, string | undefined>;

/** What an action's redirect says on the next page (fixed texts: a link cannot put words on a page). */
const DONE: Record<string, (n: string, skipped: string) => string> = {
  paused: () => 'Paused: its callbacks are held in P.paused from now on.',
  resumed: () => 'Resumed: held callbacks go back to their lanes.',
  canceled: () => 'Cancel marker stored: the callback is parked as canceled at its next attempt.',
  replayed: (n, skipped) => `Replayed ${n} message(s); ${skipped} canceled left in P.dead.`,
  purged: (n) => `Purged ${n} message(s).`,
};

/** The frame of a page for the request's operator, with an action's result when redirected from one. */
export function frameFor(
  context: ConsoleContext,
  request: FastifyRequest<{ Querystring: Query }>,
  title: string,
  current: PageFrame['current'],
): PageFrame {
  const operator = operatorOf(request);
  const done = DONE[request.query.done ?? ''];
  // Only digits from the link: nobody can make a page say something else by sending a link.
  const count = (text: string | undefined): string => (text !== undefined && /^\d{1,9}$/.test(text) ? text : '?');
  return {
    title,
    current,
    operator: operator.name,
    csrf: context.auth.csrfToken(operator),
    ...(done && { notice: { text: done(count(request.query.n), count(request.query.skipped)), kind: 'ok' as const } }),
  };
}

/** The console's pages: each reads what it shows when asked, from memory (the streams) or the broker. */
export function registerPages(app: FastifyInstance, context: ConsoleContext): void {
  const { config, names, live, actions, clock } = context;
  const windowMinutes = Math.round(config.consoleWindow / 60_000);

  app.get<{ Querystring: Query }>('/', async (request, reply) => {
    let queues: QueueDepth[] = [];
    let frame = frameFor(context, request, 'Overview', 'overview');
    try {
      queues = await queueDepths(amqpUrls(config.amqpUrl), names);
    } catch (error) {
      frame = { ...frame, notice: { text: `Queue depths are unavailable: ${(error as Error).message}`, kind: 'error' } };
    }
    const events = live.events;
    const data = {
      series: events.series(),
      queues,
      throughput: events.throughput(),
      targets: events.targetCount,
      historyMissing: live.historyMissing,
      historyReading: !live.historyCaughtUp,
      windowMinutes,
    };
    return sendPage(reply, overviewPage(frame, data));
  });

  app.get<{ Querystring: Query }>('/targets', async (request, reply) => {
    const paused = live.control.pausedOrigins().map((p) => p.origin);
    const rows = targetRows(live.events.targetStats(), paused, (origin) => live.control.stateOf(origin, healthKeys(origin)));
    return sendPage(
      reply,
      targetsPage(frameFor(context, request, 'Targets', 'targets'), rows, windowMinutes, live.events.forgottenTargets),
    );
  });

  app.get<{ Querystring: Query }>('/dead-letters', async (request, reply) => {
    const { total, messages } = await actions.peek(config.consoleDeadScan);
    const entries = messages.map((m) => m.entry);
    const filter = filterFromQuery(request.query);
    const page = deadLettersPage(frameFor(context, request, 'Dead letters', 'dead'), {
      queue: names.deadQueue,
      total,
      scanned: entries.length,
      groups: groupDead(entries),
      scannedEntries: entries,
      entries: entries.filter((entry) => matchesFilter(entry, filter)),
      filter,
      query: request.query,
    });
    return sendPage(reply, page);
  });

  app.get<{ Querystring: Query }>('/dead-letters/message', async (request, reply) => {
    const { messages } = await actions.peek(config.consoleDeadScan);
    const found = messages.find((m) => m.entry.id === request.query.id);
    const frame = frameFor(context, request, 'Dead letter', 'dead');
    if (found === undefined) {
      const notice = {
        text: `No message with that id among the first ${config.consoleDeadScan} of ${names.deadQueue}.`,
        kind: 'warn' as const,
      };
      return sendPage(reply, layout({ ...frame, notice }, html`<p><a href="/dead-letters">Dead letters</a></p>`), 404);
    }
    return sendPage(reply, deadMessagePage(frame, found.entry, shownBody(found.content), maskHeaders(found.headers)));
  });

  app.get<{ Querystring: Query }>('/dead-letters/purge', async (request, reply) => {
    const { total, messages } = await actions.peek(config.consoleDeadScan);
    return sendPage(
      reply,
      purgeConfirmPage(
        frameFor(context, request, 'Purge dead letters', 'dead'),
        names.deadQueue,
        total,
        messages.map((m) => m.entry),
      ),
    );
  });

  app.get<{ Querystring: Query }>('/ordered-keys', async (request, reply) => {
    let shards: ShardKeys[] = [];
    let frame = frameFor(context, request, 'Ordered keys', 'ordered');
    try {
      shards = await actions.orderedKeys();
    } catch (error) {
      frame = { ...frame, notice: { text: `The shards' logs are unavailable: ${(error as Error).message}`, kind: 'error' } };
    }
    return sendPage(reply, orderedKeysPage(frame, shards));
  });

  app.get<{ Querystring: Query }>('/callback', async (request, reply) => {
    const id = (request.query.id ?? '').trim();
    const since = request.query.since !== undefined && request.query.since in LOOKUP_RANGES ? request.query.since : '24h';
    let frame = frameFor(context, request, 'Callback', 'callback');
    if (id === '') return sendPage(reply, callbackPage(frame, { id, since, events: [], where: undefined }));
    const events = await lookUpCallback(amqpUrls(config.amqpUrl), names.historyQueue, id, since, clock());
    if (events === undefined)
      frame = { ...frame, notice: { text: 'P.history does not exist: run the workers with HISTORY=on to keep timelines.', kind: 'warn' } };
    const where = whereNow(events ?? [], live.control.isCancelled(id), clock());
    return sendPage(reply, callbackPage(frame, { id, since, events: events ?? [], where }));
  });
}
