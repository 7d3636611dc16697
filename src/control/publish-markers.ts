import type { ChannelWrapper } from 'amqp-connection-manager';
import type { ConfirmChannel, Options } from 'amqplib';
import { isClosed, publishConfirmed } from '../amqp/publish-confirmed.js';
import { RelayError } from '../errors.js';
import { isValidId } from '../message/callback.js';
import { sleep, withTimeout } from '../util/with-timeout.js';
import { encodeMarker, type ControlMarker } from './control-markers.js';
import { decideMarkerFailure } from './marker-failure.js';

/** The cancel marker of callback `id`; throws `CR_ERR_INVALID_CALLBACK` for an id no callback can have. */
export function cancelMarker(id: string, nowMs: number): ControlMarker {
  if (typeof id !== 'string' || !isValidId(id))
    throw new RelayError('CR_ERR_INVALID_CALLBACK', `id: ${JSON.stringify(id)} is not a callback id`, { field: 'id' });
  return { type: 'cancel', id, at: new Date(nowMs).toISOString() };
}

/** What a marker is about, for messages and its message id: the callback, origin, target or nonce. */
export function markerSubject(marker: ControlMarker): string {
  switch (marker.type) {
    case 'cancel':
      return marker.id;
    case 'pause':
    case 'resume':
    case 'limit':
      return marker.origin;
    case 'degraded':
    case 'recovered':
    case 'backoff':
      return `${marker.target} from ${marker.from}`;
    case 'sync':
      return marker.nonce;
  }
}

/** A marker in a message: `cancel marker of cb-1`. */
export const markerName = (marker: ControlMarker): string => `${marker.type} marker of ${markerSubject(marker)}`;

/**
 * The AMQP properties of every marker: persistent JSON, as the stream stores it for every reader;
 * mandatory, so a stream that does not exist returns the marker instead of dropping it silently; and
 * a message id made of the marker alone, the same when it is published again after a lost confirm.
 */
export const markerProperties = (marker: ControlMarker): Options.Publish => ({
  persistent: true,
  contentType: 'application/json',
  mandatory: true,
  messageId: `${marker.type}:${markerSubject(marker)}:${marker.at}`,
});

/** The open confirm channel to publish a marker on, waiting at most `timeoutMs` for one; `undefined` if none came. */
export type MarkerChannel = (timeoutMs: number) => Promise<ConfirmChannel | undefined>;

/** Between two attempts after a channel closed: the close must reach the reconnecting channel first. */
const REPUBLISH_PAUSE_MS = 50;

/** A one-off channel (the CLI): no other comes after it closes. */
export const fixedChannel =
  (channel: ConfirmChannel): MarkerChannel =>
  async () =>
    isClosed(channel) ? undefined : channel;

/**
 * The current channel of a reconnecting channel (a publisher's, a worker's control reader's), once its
 * setups have run on it: the stream is declared by then, as for the channel's own publishes.
 */
export function wrapperChannel(wrapper: ChannelWrapper): MarkerChannel {
  let latest: ConfirmChannel | undefined;
  void wrapper.addSetup((channel: ConfirmChannel) => {
    latest = channel;
  });
  // One wait shared by every marker waiting for the next connect: each wait adds a listener to the channel.
  let connecting: Promise<void> | undefined;
  const nextConnect = (): Promise<void> => (connecting ??= wrapper.waitForConnect().finally(() => (connecting = undefined)));
  return async (timeoutMs) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const connected = await withTimeout(nextConnect(), deadline - Date.now(), () => new Error('not connected')).then(
        () => true,
        () => false,
      );
      if (!connected) return undefined;
      if (latest !== undefined && !isClosed(latest)) return latest;
      // Closed, and the reconnecting channel has not heard yet: ask again in a moment.
      if (Date.now() + REPUBLISH_PAUSE_MS >= deadline) return undefined;
      await sleep(REPUBLISH_PAUSE_MS);
    }
  };
}

/**
 * Time a channel spent declaring the topology since a moment (a Date.now() value): left out of a
 * marker's PUBLISH_TIMEOUT, as it is no wait for the broker to store the marker.
 */
export type DeclaringSince = (since: number) => number;

/**
 * Appends one marker to the control stream and resolves once the broker confirmed it, within
 * `timeoutMs` (PUBLISH_TIMEOUT) from the call, the wait for a connection included, the time the
 * channel spent declaring the topology (`declaring`) not. A marker whose channel closed before its
 * confirm is published again on the next one: stored twice, it has the effect of one. Rejects with
 * a stable code (marker-failure.ts).
 */
export async function publishMarker(
  channel: MarkerChannel,
  queue: string,
  marker: ControlMarker,
  timeoutMs: number,
  declaring?: DeclaringSince,
): Promise<void> {
  const start = Date.now();
  const timeLeft = (): number => timeoutMs - (Date.now() - start) + (declaring?.(start) ?? 0);
  const content = encodeMarker(marker);
  const properties = markerProperties(marker);
  let lostAfterSend = false;
  for (;;) {
    const open = await channel(Math.max(0, timeLeft()));
    let error: unknown;
    if (open !== undefined) {
      try {
        return await publishConfirmed(open, { exchange: '', routingKey: queue }, content, properties, Math.max(0, timeLeft()));
      } catch (failed) {
        error = failed;
      }
    } else if (timeLeft() > 0) {
      // The wait for a channel outlasted the deadline only because a declaration ran meanwhile.
      continue;
    }
    const decision = decideMarkerFailure({ what: markerName(marker), queue, error, lostAfterSend, timeLeftMs: timeLeft(), timeoutMs });
    if (decision.action === 'reject') throw decision.error;
    lostAfterSend = true;
    await sleep(REPUBLISH_PAUSE_MS);
  }
}

/** Appends markers one at a time, each confirmed before the next (so they are stored in the order given). */
export async function publishMarkers(
  channel: MarkerChannel,
  queue: string,
  markers: readonly ControlMarker[],
  timeoutMs: number,
): Promise<void> {
  for (const marker of markers) await publishMarker(channel, queue, marker, timeoutMs);
}

/**
 * Best effort: published exactly as a confirmed marker is, but nobody waits for it; a marker that
 * could not be stored is passed to `lost` (a worker's health and pause broadcasts).
 */
export function publishMarkerBestEffort(
  channel: MarkerChannel,
  queue: string,
  marker: ControlMarker,
  timeoutMs: number,
  lost: (error: unknown) => void,
): void {
  publishMarker(channel, queue, marker, timeoutMs).catch(lost);
}
