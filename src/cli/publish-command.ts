import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseDuration } from '../config/duration.js';
import { loadConfig } from '../config/load-config.js';
import { RelayError } from '../errors.js';
import { createLogger } from '../logger.js';
import type { Callback, CallbackMethod } from '../message/callback.js';
import { createPublisher, type PublishOptions } from '../producer/publisher.js';
import { traceOption } from '../tracing/trace-context.js';

export const PUBLISH_USAGE = `callback-relay publish --url URL [--data JSON | --data-file FILE] [options]

  --url URL            target, http or https (required)
  --data JSON          request body, any JSON value (default: null)
  --data-file FILE     read the body from a JSON file instead
  --header 'N: V'      extra request header (repeatable)
  --method M           POST (default), PUT or PATCH
  --id ID              callback id, sent as webhook-id (default: a new UUID)
  --delay DURATION     delay before the first attempt, e.g. 30s, 5m
  --policy NAME        retry policy of the workers' RETRY_POLICIES_FILE (default: their own settings)
  --order-key KEY      deliver in the order published with the other callbacks of KEY (not with --delay)
  --traceparent TP     W3C trace context to carry to the receiver (00-<trace id>-<span id>-<flags>)
  --tracestate TS      its vendor state (needs --traceparent)

Connects with AMQP_URL and TOPOLOGY_PREFIX; prints the id once the broker has confirmed.`;

const bad = (field: string, problem: string): RelayError => new RelayError('CR_ERR_INVALID_CALLBACK', `${field}: ${problem}`, { field });

/** Builds the callback and options from argv; throws `CR_ERR_INVALID_CALLBACK` naming the flag. */
export function parsePublishArgs(argv: string[]): { callback: Callback; options: PublishOptions } {
  const { values } = parseArgs({
    args: argv,
    options: {
      url: { type: 'string' },
      data: { type: 'string' },
      'data-file': { type: 'string' },
      header: { type: 'string', multiple: true },
      method: { type: 'string' },
      id: { type: 'string' },
      delay: { type: 'string' },
      policy: { type: 'string' },
      'order-key': { type: 'string' },
      traceparent: { type: 'string' },
      tracestate: { type: 'string' },
    },
    strict: true,
  });
  if (values.url === undefined) throw bad('--url', 'is required');
  if (values.data !== undefined && values['data-file'] !== undefined) throw bad('--data', 'give --data or --data-file, not both');
  const text = values['data-file'] !== undefined ? readFileSync(values['data-file'], 'utf8') : (values.data ?? 'null');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw bad(values['data-file'] !== undefined ? '--data-file' : '--data', `is not valid JSON (${(error as Error).message})`);
  }
  const headers: Record<string, string> = {};
  for (const header of values.header ?? []) {
    const colon = header.indexOf(':');
    if (colon < 1) throw bad('--header', `expects "Name: value", got ${JSON.stringify(header)}`);
    headers[header.slice(0, colon).trim()] = header.slice(colon + 1).trim();
  }
  let delay: number | undefined;
  if (values.delay !== undefined) {
    delay = parseDuration(values.delay);
    if (delay === undefined) throw bad('--delay', `must be a duration such as 30s or 5m, got ${JSON.stringify(values.delay)}`);
  }
  const callback: Callback = { url: values.url, body };
  if (Object.keys(headers).length > 0) callback.headers = headers;
  if (values.method !== undefined) callback.method = values.method.toUpperCase() as CallbackMethod;
  if (values.id !== undefined) callback.id = values.id;
  if (values.policy !== undefined) callback.policy = values.policy;
  if (values['order-key'] !== undefined) {
    // Refused before connecting, naming the flags; publish() checks the key itself (`orderKey`).
    if (delay !== undefined && delay > 0)
      throw bad('--delay', 'cannot delay an ordered callback (--order-key): it would be overtaken by those published after it');
    callback.orderKey = values['order-key'];
  }
  const options: PublishOptions = {};
  if (delay !== undefined) options.delay = delay;
  // Checked before connecting; the error names the option, which is the flag's name.
  const trace = traceOption(values);
  if (trace) Object.assign(options, trace);
  return { callback, options };
}

export async function publishCommand(argv: string[]): Promise<void> {
  const { callback, options } = parsePublishArgs(argv);
  const config = loadConfig();
  const publisher = createPublisher(
    config,
    createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, 'callback-relay-cli', config.logFormat),
  );
  try {
    const { id } = await publisher.publish(callback, options);
    process.stdout.write(`published ${id}\n`);
  } finally {
    await publisher.close();
  }
}
