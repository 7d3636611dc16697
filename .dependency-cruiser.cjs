/**
 * Layering of src/ (run by `npm test` as `npm run lint:deps`). The bottom layers hold pure decisions
 * and settings: they must not depend on the broker client, the HTTP client, the logger, the web
 * server or the code that drives them, so that they stay testable without any of it.
 */
const BOTTOM = '^src/(config|policy|isolation|formats)/';
const IO_PACKAGES = 'node_modules/(amqplib|amqp-connection-manager|undici|pino|fastify|prom-client|@opentelemetry)/';
const ABOVE = '^src/(amqp|cli|consumer|control|dlq|events|history|http|ingest|metrics|producer|settle|signing|topology|tracing)/';

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
    {
      name: 'bottom-imports-nothing-above',
      severity: 'error',
      comment: 'config, policy, isolation and formats are the bottom layer: they import nothing that drives the broker, HTTP or logging.',
      from: { path: BOTTOM },
      to: { path: ABOVE },
    },
    {
      name: 'bottom-reaches-no-io-package',
      severity: 'error',
      comment: 'Not even indirectly: a bottom-layer module must load without amqplib, undici, pino, fastify, prom-client or OpenTelemetry.',
      from: { path: BOTTOM },
      to: { path: IO_PACKAGES, reachable: true },
    },
    {
      name: 'only-the-consumer-imports-the-consumer',
      severity: 'error',
      comment: 'src/consumer drives the rest (worker, pipeline), and only the package entry (src/index.ts) exports it; what it drives sits below it: the ports they share are in src/reports.ts, the settle in src/settle.',
      from: { path: '^src/', pathNot: '^src/(consumer/|index\\.ts$)' },
      to: { path: '^src/consumer/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'], extensions: ['.ts', '.js'] },
  },
};
