import { isIP } from 'node:net';
import { DEFAULT_LANES } from '../formats/limits.js';
import { isolationSchema } from './isolation-schema.js';

/**
 * Every setting: default, doc, format, env var. The settings table of docs/configuration.md is
 * generated from this object (`npm run docs:config`), so the two cannot drift. Durations are held in
 * milliseconds.
 */
export const configSchema = {
  amqpUrl: {
    doc: 'Broker URL, or several separated by commas (the nodes of a cluster, tried in turn). Credentials in it are never logged.',
    format: 'amqp-url',
    default: 'amqp://localhost',
    env: 'AMQP_URL',
    sensitive: true,
  },
  topologyPrefix: {
    doc: 'Every exchange and queue name derives from it: exchange P, queues P.work, P.dead, the delay levels P.delay.up.1s … P.delay.up.3145728s.',
    format: 'topology-prefix',
    default: 'callback-relay',
    env: 'TOPOLOGY_PREFIX',
  },
  delayMode: {
    doc: '`plugin` (x-delayed-message exchange), `queues` (plugin-free TTL delay levels), `auto` (plugin if the broker has it).',
    format: ['auto', 'plugin', 'queues'],
    default: 'auto',
    env: 'DELAY_MODE',
  },
  queueType: {
    doc: 'Type of the work, dead-letter and delay queues: `quorum` (replicated, delivery limit) or `classic`.',
    format: ['quorum', 'classic'],
    default: 'quorum',
    env: 'QUEUE_TYPE',
  },
  deliveryLimit: {
    doc: 'Quorum queues only: deliveries of one message (worker crashes, lost channels) before the broker dead-letters it to P.dead.',
    format: 'positive-int',
    default: 10,
    env: 'DELIVERY_LIMIT',
  },
  lanes: {
    doc: 'Work queues (lanes) P.work, P.work.1, …; each target hashes to one, so a backlog holds up only its lane. Fixed per topology: to change it, use a new TOPOLOGY_PREFIX.',
    format: 'lanes',
    default: DEFAULT_LANES,
    env: 'LANES',
  },
  retrySchedule: {
    doc: 'Delays before attempts 2, 3, …; units ms/s/m/h.',
    format: 'duration-list',
    default: [15e3, 15e3, 30e3, 18e4, 6e5, 12e5, 18e5, 18e5, 18e5, 36e5, 108e5, 108e5, 108e5, 216e5, 216e5],
    env: 'RETRY_SCHEDULE',
  },
  maxAttempts: {
    defaultText: 'schedule length + 1',
    doc: 'Total attempts including the first; past the end of the schedule its last delay repeats. Empty: schedule length + 1.',
    format: 'optional-positive-int',
    default: null as number | null,
    env: 'MAX_ATTEMPTS',
  },
  retryJitter: {
    doc: 'Random spread applied to each scheduled delay, as a fraction (0.1 = ±10%). 0 disables it.',
    format: 'fraction',
    default: 0.1,
    env: 'RETRY_JITTER',
  },
  retryAfterMax: {
    doc: 'Upper clamp for a receiver\'s Retry-After (seconds or HTTP date); the lower clamp is 1s.',
    format: 'positive-duration',
    default: 216e5,
    env: 'RETRY_AFTER_MAX',
  },
  httpTimeout: {
    doc: 'Per attempt, whole request (connect, headers and body).',
    format: 'positive-duration',
    default: 10e3,
    env: 'HTTP_TIMEOUT',
  },
  successBody: {
    doc: 'If set, a 2xx answer counts as success only when its body (trimmed) equals this string, e.g. `success`.',
    format: String,
    default: '',
    env: 'SUCCESS_BODY',
  },
  retryPoliciesFile: {
    doc: 'A JSON file of named retry policies `{"payment": {"schedule": "15s,30s,3m", "maxAttempts": 4, "timeout": "5s", "successBody": "success"}}`, every field optional (default: the setting it stands for), picked by a callback\'s `policy` field. Read once, at start.',
    format: String,
    default: '',
    env: 'RETRY_POLICIES_FILE',
  },
  targetLimitsFile: {
    doc: 'A JSON file of fleet-wide limits per origin `{"https://partner.example": {"rate": "20/s", "burst": 5, "concurrency": 5}}` (rate, burst, concurrency; give a rate, a concurrency or both), applied by every worker. `callback-relay target limit` overrides an origin\'s entry (or clears it) for the whole fleet. Read once, at start; needs ISOLATION=on. See docs/limits.md.',
    format: String,
    default: '',
    env: 'TARGET_LIMITS_FILE',
  },
  responseBodyLimit: {
    doc: 'Bytes of a response body read at most (then discarded); a longer body is cut off.',
    format: 'positive-int',
    default: 65_536,
    env: 'RESPONSE_BODY_LIMIT',
  },
  maxPayloadBytes: {
    doc: 'Largest accepted message (the encoded wire JSON), enforced at publish and at consume.',
    format: 'positive-int',
    default: 1_048_576,
    env: 'MAX_PAYLOAD_BYTES',
  },
  prefetch: {
    doc: 'A worker\'s concurrency: attempts in flight at most, over all lanes. Each lane\'s consumer may hold as many unacknowledged messages (consumer prefetch), twice as many with ISOLATION on (a look-ahead that shows isolation a busy target), so a target alone in its lane can fill every slot; in queues mode 400 more on each lane (not on P.slow), for callbacks held until due (docs/delay-modes.md).',
    format: 'prefetch',
    default: 100,
    env: 'PREFETCH',
  },
  duePrefetch: {
    defaultText: 'PREFETCH',
    doc: 'Plugin mode: messages a worker moves from P.due into their lanes at once (the P.due consumer\'s prefetch). Each due callback waits for about this many ÷ the rate falling due (100 at 1,000 a second: about 50 ms); more moves more a second when callbacks fall due faster than the worker delivers (docs/delay-modes.md).',
    format: 'optional-prefetch',
    default: null as number | null,
    env: 'DUE_PREFETCH',
  },
  drainTimeout: {
    doc: 'On SIGTERM/SIGINT, how long in-flight deliveries may finish before the worker closes; unfinished ones return to the queue.',
    format: 'duration',
    default: 15e3,
    env: 'DRAIN_TIMEOUT',
  },
  publishTimeout: {
    doc: 'How long a publish waits for the broker\'s confirm (including while disconnected) before it rejects; in a worker, how long an outcome event waits before it is given up, and after how long a copy\'s late confirm is logged (the copy is waited for until the broker answers). A publisher\'s first topology declaration is not counted.',
    format: 'positive-duration',
    default: 10e3,
    env: 'PUBLISH_TIMEOUT',
  },
  publishBufferLimit: {
    doc: 'Publishes waiting for a confirm at most; beyond it publish() rejects at once instead of buffering.',
    format: 'positive-int',
    default: 1_000,
    env: 'PUBLISH_BUFFER_LIMIT',
  },
  ...isolationSchema,
  targetPolicy: {
    doc: '`strict` refuses loopback, private, CGNAT and special-purpose addresses as well as link-local (cloud metadata), unspecified and known metadata ones; `default` refuses only the latter. Checked on the address actually dialled; list internal receivers in TARGET_ALLOW.',
    format: ['default', 'strict'],
    default: 'strict',
    env: 'TARGET_POLICY',
  },
  targetAllow: {
    doc: 'Comma-separated CIDRs always allowed, each optionally with ports (`10.0.0.0/8:443,8443`; without ports: every port); the allow list wins over every rule but one: the broker the worker is connected to is never dialled on its AMQP, management or Prometheus ports.',
    format: 'cidr-list',
    default: '',
    env: 'TARGET_ALLOW',
  },
  targetDeny: {
    doc: 'Comma-separated CIDRs refused in addition to the built-in rules, each optionally with ports (as TARGET_ALLOW).',
    format: 'cidr-list',
    default: '',
    env: 'TARGET_DENY',
  },
  signingSecret: {
    doc: 'Standard Webhooks secrets (`whsec_<base64>`, space-separated for rotation) to sign every attempt with. Empty: no signature.',
    format: 'signing-secrets',
    default: '',
    env: 'SIGNING_SECRET',
    sensitive: true,
  },
  signingSecretFile: {
    doc: 'A file holding SIGNING_SECRET instead (e.g. a container secret); setting both is an error.',
    format: String,
    default: '',
    env: 'SIGNING_SECRET_FILE',
  },
  signingTargetSecretsFile: {
    doc: 'A JSON file `{"https://origin": "whsec_…"}` of per-target secrets, used instead of SIGNING_SECRET for those origins.',
    format: String,
    default: '',
    env: 'SIGNING_TARGET_SECRETS_FILE',
  },
  metricsPort: {
    doc: 'Port of `/metrics` (Prometheus), `/healthz` and `/readyz`; 0 turns the server off.',
    format: 'port',
    default: 9464,
    env: 'METRICS_PORT',
  },
  ingestPort: {
    doc: 'Port of the HTTP ingest (`callback-relay ingest`): `POST /v1/callbacks`, probes, `/metrics`.',
    format: 'port',
    default: 8080,
    env: 'INGEST_PORT',
  },
  ingestTokens: {
    doc: 'Bearer tokens the HTTP ingest accepts, comma-separated (several during a rotation), each at least 16 characters. The ingest refuses to start without one.',
    format: 'token-list',
    default: '',
    env: 'INGEST_TOKENS',
    sensitive: true,
  },
  ingestBatchMax: {
    doc: 'Callbacks in one `POST /v1/callbacks:batch` at most.',
    format: 'positive-int',
    default: 100,
    env: 'INGEST_BATCH_MAX',
  },
  ingestBatchBytes: {
    doc: 'Largest request body of `POST /v1/callbacks:batch`, in bytes (413 beyond). A single POST\'s limit is MAX_PAYLOAD_BYTES.',
    format: 'positive-int',
    default: 4_194_304,
    env: 'INGEST_BATCH_BYTES',
  },
  ingestInflightBytes: {
    doc: 'Request body bytes one ingest replica holds at once, counted by Content-Length (a chunked body counts as its route\'s limit) from before the body is read until the answer; a request beyond it gets 503 `CR_ERR_INGEST_BUSY` unread. At least MAX_PAYLOAD_BYTES and INGEST_BATCH_BYTES.',
    format: 'positive-int',
    default: 33_554_432,
    env: 'INGEST_INFLIGHT_BYTES',
  },
  ingestRequestTimeout: {
    doc: 'Time an ingest client has to send a whole request, headers and body, from its first byte; then it gets 408 `CR_ERR_REQUEST_TIMEOUT` and the connection is closed. Checked every second (every quarter of it when shorter).',
    format: 'positive-duration',
    default: 30e3,
    env: 'INGEST_REQUEST_TIMEOUT',
  },
  ingestConnectionTimeout: {
    doc: 'An ingest connection on which nothing moves for this long is closed: a client that opens one and sends nothing, stops sending mid-request, or does not take its answer. Not while the ingest waits for the broker\'s confirm (PUBLISH_TIMEOUT), nor between requests (keep-alive: 65s).',
    format: 'positive-duration',
    default: 60e3,
    env: 'INGEST_CONNECTION_TIMEOUT',
  },
  consoleHost: {
    doc: 'Address the operator console listens on: loopback by default, so only this machine reaches it. `0.0.0.0` (or `::`) opens it to the network: then put it behind HTTPS.',
    // An IP literal, so the address is exactly what the first log line says.
    format: (value: unknown) => {
      if (typeof value !== 'string' || isIP(value) === 0) throw new Error('must be an IP address such as 127.0.0.1, ::1 or 0.0.0.0');
    },
    default: '127.0.0.1',
    env: 'CONSOLE_HOST',
  },
  consolePort: {
    doc: 'Port of the operator console (`callback-relay console`): overview, targets, dead letters, a callback\'s timeline.',
    format: 'port',
    default: 8081,
    env: 'CONSOLE_PORT',
  },
  consoleTokens: {
    doc: 'Who may use the console: `name:token` entries, comma-separated, each token of at least 128 bits (docs/console.md#access: 24 characters or more, mixed); the name is logged with every action. The console refuses to start without one.',
    format: 'console-token-list',
    default: '',
    env: 'CONSOLE_TOKENS',
    sensitive: true,
  },
  consoleWindow: {
    doc: 'How far back the console\'s overview and targets look: it reads P.history from this long ago (x-stream-offset by time) and keeps only this window in memory.',
    format: 'positive-duration',
    default: 36e5,
    env: 'CONSOLE_WINDOW',
  },
  consoleMaxTargets: {
    doc: 'Origins the console keeps statistics for at most (about 20 KB each, measured); past it, the one seen longest ago is forgotten.',
    format: 'positive-int',
    default: 1000,
    env: 'CONSOLE_MAX_TARGETS',
  },
  consoleDeadScan: {
    doc: 'Messages of P.dead the dead-letters page looks at (from its head, each put back untouched, as `dlq list` does); a page being built holds their bodies.',
    format: 'positive-int',
    default: 200,
    env: 'CONSOLE_DEAD_SCAN',
  },
  autoPauseAfter: {
    doc: 'Pause a target fleet-wide (as `callback-relay target pause` does) once every attempt to it has failed for this long; its callbacks are then held without spending attempts until `target resume`. 0 = never.',
    format: 'duration',
    default: 0,
    env: 'AUTO_PAUSE_AFTER',
  },
  events: {
    doc: 'Outcome events (`delivered`, `retry-scheduled`, `dead`, `canceled`, `paused`) on the topic exchange P.events: `on` best effort, `durable` persistent and confirmed before the callback is acked, `off` none.',
    format: ['on', 'durable', 'off'],
    default: 'on',
    env: 'EVENTS',
  },
  history: {
    doc: 'Declare the stream P.history, bound to P.events, that `callback-relay history` reads (needs EVENTS=on or durable).',
    format: ['on', 'off'],
    default: 'off',
    env: 'HISTORY',
  },
  historyMaxAge: {
    doc: 'How long P.history keeps events: a stream `x-max-age` such as 7D, 12h or 30m (units Y, M, D, h, m, s).',
    format: 'stream-max-age',
    default: '7D',
    env: 'HISTORY_MAX_AGE',
  },
  logLevel: {
    doc: 'pino log level.',
    format: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
    default: 'info',
    env: 'LOG_LEVEL',
  },
  logFormat: {
    doc: 'How log lines look: `json` (one JSON object per line, for containers and collectors), `pretty` (readable lines for a person), `auto` (pretty when stdout is a terminal, else json).',
    format: ['auto', 'json', 'pretty'],
    default: 'auto',
    env: 'LOG_FORMAT',
  },
};
