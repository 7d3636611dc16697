import { RelayError } from '../errors.js';
import { sleep } from '../util/with-timeout.js';
import { inspectBroker, type BrokerInfo } from './inspect-broker.js';

/**
 * Inspects the broker, retrying with a growing pause (1 s up to 10 s) while it is unreachable, as
 * the connection manager does for the main connection. Rejects with `CR_ERR_CLOSED` once `signal` aborts.
 */
export async function waitForBroker(url: string, signal: AbortSignal, onRetry: (error: Error) => void = () => {}): Promise<BrokerInfo> {
  for (let pauseMs = 1_000; ; pauseMs = Math.min(pauseMs * 2, 10_000)) {
    if (signal.aborted) throw new RelayError('CR_ERR_CLOSED', 'closed while waiting for the broker');
    try {
      return await inspectBroker(url);
    } catch (error) {
      onRetry(error as Error);
      await sleep(pauseMs, signal);
    }
  }
}
