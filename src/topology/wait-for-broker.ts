import { RelayError } from '../errors.js';
import { sleep } from '../util/with-timeout.js';
import { inspectBroker, type BrokerInfo } from './inspect-broker.js';

/**
 * Inspects the first broker of `urls` that answers, retrying with a growing pause (1 s up to 10 s)
 * while none does, as the connection manager does for the main connection. Resolves with the URL
 * that answered. Rejects with `CR_ERR_CLOSED` once `signal` aborts.
 */
export async function waitForBroker(
  urls: string[],
  signal: AbortSignal,
  onRetry: (url: string, error: Error) => void = () => {},
): Promise<BrokerInfo & { url: string }> {
  for (let pauseMs = 1_000; ; pauseMs = Math.min(pauseMs * 2, 10_000)) {
    for (const url of urls) {
      if (signal.aborted) throw new RelayError('CR_ERR_CLOSED', 'closed while waiting for the broker');
      try {
        return { ...(await inspectBroker(url)), url };
      } catch (error) {
        onRetry(url, error as Error);
      }
    }
    await sleep(pauseMs, signal);
  }
}
