import type { ConfirmChannel } from 'amqplib';
import { publishConfirmed } from '../amqp/publish-confirmed.js';
import { RelayError } from '../errors.js';
import { isValidId } from '../message/callback.js';
import { encodeMarker, type ControlMarker } from './control-markers.js';

/** The cancel marker of callback `id`; throws `CR_ERR_INVALID_CALLBACK` for an id no callback can have. */
export function cancelMarker(id: string, nowMs: number): ControlMarker {
  if (typeof id !== 'string' || !isValidId(id)) throw new RelayError('CR_ERR_INVALID_CALLBACK', `id: ${JSON.stringify(id)} is not a callback id`, { field: 'id' });
  return { type: 'cancel', id, at: new Date(nowMs).toISOString() };
}

/** The AMQP properties of a marker: persistent JSON, as the stream stores it for every reader. */
export const MARKER_OPTIONS = { persistent: true, contentType: 'application/json' } as const;

/**
 * Appends markers to P.control one at a time, each confirmed by the broker before the next (so they
 * are stored in the order given). Mandatory: a stream that does not exist returns the marker instead
 * of dropping it silently.
 */
export async function publishMarkers(channel: ConfirmChannel, queue: string, markers: readonly ControlMarker[], timeoutMs: number): Promise<void> {
  for (const marker of markers) {
    await publishConfirmed(channel, { exchange: '', routingKey: queue }, encodeMarker(marker), { ...MARKER_OPTIONS, mandatory: true, messageId: `${marker.type}:${marker.at}` }, timeoutMs);
  }
}
