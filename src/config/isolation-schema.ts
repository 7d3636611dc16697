/**
 * The settings of target isolation (seed 002): per-target health, the bulkhead and the slow lane.
 * Part of the one schema in schema.ts; kept apart only to keep each file small.
 */
export const isolationSchema = {
  isolation: {
    doc: 'Isolate bad targets (per-target bulkhead, health, slow lane P.slow). `off` delivers everything in the main lane.',
    format: ['on', 'off'],
    default: 'on',
    env: 'ISOLATION',
  },
  targetKey: {
    doc: 'What counts as one target: `origin` (scheme, host and port of the URL) or `host` (host name only).',
    format: ['origin', 'host'],
    default: 'origin',
    env: 'TARGET_KEY',
  },
  targetConcurrency: {
    defaultText: 'PREFETCH / 10, rounded up',
    doc: 'Concurrent main-lane deliveries per target (bulkhead); further messages for it wait briefly or are deferred (OVERFLOW_DELAY).',
    format: 'optional-positive-int',
    default: null as number | null,
    env: 'TARGET_CONCURRENCY',
  },
  targetInitialConcurrency: {
    doc: 'Concurrency a target starts with; each fast result adds one up to TARGET_CONCURRENCY, each abnormal one halves it, so a target that hangs from the start holds few slots.',
    format: 'positive-int',
    default: 2,
    env: 'TARGET_INITIAL_CONCURRENCY',
  },
  overflowDelay: {
    doc: 'Messages of a target at its cap wait for a slot (up to TARGET_CONCURRENCY of them, or all of PREFETCH − TARGET_CONCURRENCY for a target whose recent results were all fast); further ones are deferred by this long (not an attempt).',
    format: 'positive-duration',
    default: 1e3,
    env: 'OVERFLOW_DELAY',
  },
  slowPrefetch: {
    defaultText: 'PREFETCH / 10, rounded up',
    doc: 'Concurrency of each worker on the slow lane P.slow, where degraded targets\' callbacks go.',
    format: 'optional-prefetch',
    default: null as number | null,
    env: 'SLOW_PREFETCH',
  },
  slowThreshold: {
    doc: 'An attempt slower than this counts as abnormal, like a failed one (network error, timeout, 408, 429, 5xx).',
    format: 'positive-duration',
    default: 3e3,
    env: 'SLOW_THRESHOLD',
  },
  healthWindow: {
    doc: 'Recent attempts remembered per target (sliding window).',
    format: 'positive-int',
    default: 20,
    env: 'HEALTH_WINDOW',
  },
  degradeThreshold: {
    doc: 'Abnormal attempts in the window that make a target degraded (at most HEALTH_WINDOW).',
    format: 'positive-int',
    default: 10,
    env: 'DEGRADE_THRESHOLD',
  },
  recoverThreshold: {
    defaultText: 'DEGRADE_THRESHOLD / 2, rounded down',
    doc: 'A degraded target recovers when its abnormal attempts in the window are down to this, and QUIET_PERIOD has passed.',
    format: 'optional-count',
    default: null as number | null,
    env: 'RECOVER_THRESHOLD',
  },
  quietPeriod: {
    doc: 'Time without any abnormal attempt before a degraded target may recover, so a flapping target stays out.',
    format: 'duration',
    default: 30e3,
    env: 'QUIET_PERIOD',
  },
  probeConcurrency: {
    doc: 'Probe deliveries in flight per degraded target in the main lane; its other callbacks go to the slow lane.',
    format: 'positive-int',
    default: 1,
    env: 'PROBE_CONCURRENCY',
  },
  maxProbes: {
    defaultText: 'PREFETCH / 10, rounded up',
    doc: 'Probe deliveries in flight over all degraded targets, so many bad targets cannot fill the main lane.',
    format: 'optional-positive-int',
    default: null as number | null,
    env: 'MAX_PROBES',
  },
  healthMaxTargets: {
    doc: 'Targets whose health a worker remembers; the least recently seen is forgotten first.',
    format: 'positive-int',
    default: 10_000,
    env: 'HEALTH_MAX_TARGETS',
  },
};
