import type { RelayConfig } from '../config/load-config.js';
import { amqpUrls } from '../config/amqp-urls.js';
import { parseMarker } from '../control/control-markers.js';
import { CONTROL_MAX_AGE_MS } from '../topology/declare-control.js';
import type { OutcomeEvent } from '../events/outcome-events.js';
import type { Logger } from '../logger.js';
import type { TopologyNames } from '../topology/topology-names.js';
import { ControlView } from './control-view.js';
import { EventWindow } from './event-window.js';
import { EndedSessions, parseSessionEnd } from './session-ends.js';
import { followStream, type StreamFollower } from './stream-follower.js';

/** What one console replica holds in memory: the window of P.history and the state of P.control. */
export interface LiveState {
  events: EventWindow;
  control: ControlView;
  /** Console sessions a logout ended, on any replica (their markers on P.control). */
  sessions: EndedSessions;
  /** P.history was not found (the workers run with HISTORY=off): the overview and targets say so. */
  readonly historyMissing: boolean;
  /** The read of P.history has reached the present: until then the counts are still growing. */
  readonly historyCaughtUp: boolean;
  close(): Promise<void>;
}

/** A LiveState whose reads begin on `follow()`: the console starts them once it listens, so its first log line says where. */
export interface StartableLiveState extends LiveState {
  follow(): void;
}

/**
 * Once `follow()` is called, follows P.history from CONSOLE_WINDOW ago (`x-stream-offset` with a timestamp) into an EventWindow,
 * and P.control from its first marker into a ControlView (a pause lasts until its resume, however old).
 * Both live only in memory: every replica builds its own from the streams, so replicas need no
 * shared state and a restart loses nothing.
 */
export function startLiveState(
  config: Pick<RelayConfig, 'amqpUrl' | 'consoleWindow' | 'consoleMaxTargets'>,
  names: TopologyNames,
  logger: Logger,
  clock: () => number = Date.now,
): StartableLiveState {
  const limits = { windowMs: config.consoleWindow, maxTargets: config.consoleMaxTargets };
  const events = new EventWindow(limits, clock);
  const control = new ControlView(limits, clock, CONTROL_MAX_AGE_MS);
  const sessions = new EndedSessions(clock);
  const urls = amqpUrls(config.amqpUrl);
  let history: StreamFollower | undefined;
  let markers: StreamFollower | undefined;
  const follow = (): void => {
    history ??= followStream({
      urls,
      queue: names.historyQueue,
      start: () => new Date(clock() - config.consoleWindow),
      onMessage: (content) => {
        const event = parseEvent(content);
        if (event) events.add(event);
      },
      onRestart: () => events.clear(),
      logger,
    });
    markers ??= followStream({
      urls,
      queue: names.controlQueue,
      start: () => 'first',
      onMessage: (content) => {
        const marker = parseMarker(content);
        if (marker) return control.apply(marker);
        const ended = parseSessionEnd(content);
        if (ended) sessions.apply(ended);
      },
      // Markers are state: a stream declared anew is read again from its start into what is known.
      onRestart: () => {},
      logger,
    });
  };
  return {
    follow,
    events,
    control,
    sessions,
    get historyMissing() {
      return history?.missing ?? false;
    },
    get historyCaughtUp() {
      return history?.caughtUp ?? false;
    },
    async close() {
      await Promise.all([history?.close(), markers?.close()]);
    },
  };
}

/** An outcome event, or `undefined` for anything else on the stream (a reader skips what it cannot use). */
function parseEvent(content: Buffer): OutcomeEvent | undefined {
  try {
    const event = JSON.parse(content.toString('utf8')) as OutcomeEvent;
    return typeof event === 'object' &&
      event !== null &&
      typeof event.id === 'string' &&
      typeof event.at === 'string' &&
      typeof event.url === 'string'
      ? event
      : undefined;
  } catch {
    return undefined;
  }
}
