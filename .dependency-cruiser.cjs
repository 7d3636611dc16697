/**
 * Layering of src/ (run by `npm test` as `npm run lint:deps`). Each layer imports only from its own
 * layer and those below it, never from one above, so each can be read, tested and loaded without what
 * drives it; types included (a type-only import counts). A new folder or top-level file of src/ must be
 * given a layer here first (rule `every-module-has-a-layer`).
 */
const LAYERS = [
  // Error codes and the log line format: no imports of src/ at all.
  ['base', ['errors.ts', 'log-format.ts']],
  // Value formats and pure decisions (retry schedule, outcome classification, message policy).
  ['formats', ['formats/', 'policy/']],
  // The callback message and its headers: what travels on the wire.
  ['message', ['message/']],
  // Settings (convict schema, files they name) and the pure scheduling of isolation.
  ['settings', ['config/', 'isolation/', 'reports.ts']],
  // Services each part uses: logger, HTTP guard, signing, metrics, tracing, process helpers.
  ['services', ['logger.ts', 'util/', 'http/', 'signing/', 'metrics/', 'tracing/']],
  // The broker client: connections, confirmed publishes, broker errors.
  ['amqp', ['amqp/']],
  // Topology as data, every name derived from the one prefix, with its declarations and teardown.
  ['topology', ['topology/']],
  // Settling a message: copies, holds and moves.
  ['settle', ['settle/']],
  // Ordered delivery per key: each shard's log on a stream.
  ['ordering', ['ordering/']],
  // The control plane (cancel, pause, fleet presence) and outcome events.
  ['control', ['control/', 'events/']],
  // What reads and publishes on the topology for people and producers.
  ['tools', ['history/', 'producer/', 'dlq/']],
  // Servers on top of them: HTTP ingest, the operator console.
  ['servers', ['ingest/', 'console/']],
  // The worker.
  ['consumer', ['consumer/']],
  // Entry points: the CLI and the package's exports.
  ['entry', ['cli/', 'index.ts']],
];
const pattern = (entries) => `^src/(${entries.map((entry) => entry.replace('.', '\\.') + (entry.endsWith('/') ? '' : '$')).join('|')})`;
const layerRules = LAYERS.slice(0, -1).map(([name, entries], index) => ({
  name: `layer-${name}-imports-nothing-above`,
  severity: 'error',
  comment: `${entries.join(', ')} (layer ${name}) may import only its own layer and those below it (.dependency-cruiser.cjs, LAYERS).`,
  from: { path: pattern(entries) },
  to: { path: pattern(LAYERS.slice(index + 1).flatMap(([, above]) => above)) },
}));

/**
 * The bottom layers hold pure decisions, settings and message formats: they must not depend on the
 * broker client, the HTTP client, the logger, the web server or the code that drives them, so that
 * they stay testable without any of it.
 */
const BOTTOM = '^src/(config|policy|isolation|formats|message)/';
const IO_PACKAGES = 'node_modules/(amqplib|amqp-connection-manager|undici|pino|fastify|prom-client|@opentelemetry)/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import cycle: the modules on it can no longer be read, tested or loaded one at a time.',
      from: { path: '^src/' },
      // Type-only imports vanish at compile time; a cycle of them is still a smell, but not a load-order bug.
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    ...layerRules,
    {
      name: 'every-module-has-a-layer',
      severity: 'error',
      comment: 'A folder or top-level file of src/ that LAYERS does not name: give it a layer, so the order covers it.',
      from: { path: '^src/', pathNot: pattern(LAYERS.flatMap(([, entries]) => entries)) },
      to: {},
    },
    {
      name: 'bottom-reaches-no-io-package',
      severity: 'error',
      comment:
        'Not even indirectly: a module of config, policy, isolation, formats or message must load without amqplib, undici, pino, fastify, prom-client or OpenTelemetry.',
      from: { path: BOTTOM },
      to: { path: IO_PACKAGES, reachable: true },
    },
    {
      name: 'only-the-consumer-imports-the-consumer',
      severity: 'error',
      comment:
        'src/consumer drives the rest (worker, pipeline), and only the package entry (src/index.ts) exports it; what it drives sits below it: the ports they share are in src/reports.ts, the settle in src/settle.',
      from: { path: '^src/', pathNot: '^src/(consumer/|index\\.ts$)' },
      to: { path: '^src/consumer/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js'],
    },
  },
};
