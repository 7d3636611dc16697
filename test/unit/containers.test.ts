/**
 * Invariants of the container files (docker-compose.yml, Dockerfile, rabbitmq/). There is no Docker
 * engine in CI, so these are checked as text: the things that break scaling, graceful shutdown,
 * the broker's plugin or the test harness if someone edits them carelessly.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseDuration } from '../../src/config/duration.js';
import { configSchema } from '../../src/config/schema.js';
import { weakTokenProblem } from '../../src/console/token-strength.js';
import { argDefaults, copySources, expand, fromImage, instructionsOf, stagesOf } from '../support/dockerfile.js';

const repoFile = (path: string): string => fileURLToPath(new URL(`../../${path}`, import.meta.url));
const read = (path: string): string => readFileSync(repoFile(path), 'utf8');

type Dict = Record<string, unknown>;
const isDict = (value: unknown): value is Dict => typeof value === 'object' && value !== null && !Array.isArray(value);

function dict(value: unknown, what: string): Dict {
  if (!isDict(value)) throw new Error(`${what} is not a mapping`);
  return value;
}

// ---- compose helpers ----

/** `environment:` as a map, whichever of the two compose syntaxes (map or KEY=VALUE list) is used. */
function environmentOf(service: Dict): Record<string, string> {
  const env = service.environment;
  if (env === undefined || env === null) return {};
  if (Array.isArray(env)) {
    return Object.fromEntries(
      env.map((entry) => {
        const text = String(entry);
        const eq = text.indexOf('=');
        return eq === -1 ? [text, ''] : [text.slice(0, eq), text.slice(eq + 1)];
      }),
    );
  }
  return Object.fromEntries(Object.entries(dict(env, 'environment')).map(([key, value]) => [key, String(value ?? '')]));
}

/** Container-side ports of `ports:` (short "host:container[/proto]" strings, numbers, or long syntax). */
function containerPorts(service: Dict): number[] {
  const ports = service.ports;
  if (!Array.isArray(ports)) return [];
  return ports.map((port) => {
    if (isDict(port)) return Number(port.target);
    const last = String(port).split(':').pop() ?? '';
    return Number(last.split('/')[0]);
  });
}

/** Compose durations: Go style, e.g. `25s`, `1m`, `1m30s`, `1500ms`. */
function composeDurationMs(text: string): number {
  const units: Record<string, number> = { us: 0.001, ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
  const parts = [...text.trim().matchAll(/(\d+(?:\.\d+)?)(us|ms|h|m|s)/g)];
  if (parts.length === 0 || parts.map((part) => part[0]).join('') !== text.trim()) throw new Error(`not a compose duration: ${text}`);
  return parts.reduce((sum, part) => sum + Number(part[1]) * (units[part[2] ?? ''] ?? Number.NaN), 0);
}

// ---- the files ----

const compose = dict(parse(read('docker-compose.yml')), 'docker-compose.yml');
const services = dict(compose.services, 'services');
const rabbitmq = dict(services.rabbitmq, 'services.rabbitmq');
const worker = dict(services.worker, 'services.worker');

const rootDockerfile = instructionsOf(read('Dockerfile'));
const rootStages = stagesOf(rootDockerfile);
const finalStage = rootStages.at(-1) ?? [];

const brokerDockerfile = instructionsOf(read('rabbitmq/Dockerfile'));
const brokerArgs = argDefaults(brokerDockerfile);
const brokerStages = stagesOf(brokerDockerfile);
const brokerRuns = brokerDockerfile.filter((instruction) => instruction.keyword === 'RUN').map((instruction) => instruction.args);

describe('docker-compose.yml', () => {
  it('has no obsolete top-level version key', () => {
    expect(compose).not.toHaveProperty('version');
  });

  it('worker has no container_name, so `--scale worker=N` works', () => {
    expect(worker).not.toHaveProperty('container_name');
  });

  it('worker waits for a healthy broker', () => {
    const dependsOn = dict(worker.depends_on, 'worker.depends_on (must be the long syntax with a condition)');
    expect(dict(dependsOn.rabbitmq, 'worker.depends_on.rabbitmq').condition).toBe('service_healthy');
  });

  it('worker stop_grace_period exceeds its DRAIN_TIMEOUT', () => {
    const drainText = environmentOf(worker).DRAIN_TIMEOUT;
    const drainMs = drainText === undefined || drainText === '' ? configSchema.drainTimeout.default : parseDuration(drainText);
    expect(drainMs, `DRAIN_TIMEOUT=${drainText}`).toBeDefined();
    expect(typeof worker.stop_grace_period, 'worker.stop_grace_period must be set (default is 10s)').toBe('string');
    expect(composeDurationMs(String(worker.stop_grace_period))).toBeGreaterThan(drainMs ?? Number.POSITIVE_INFINITY);
  });

  it('rabbitmq has a healthcheck', () => {
    const healthcheck = dict(rabbitmq.healthcheck, 'rabbitmq.healthcheck');
    const test = Array.isArray(healthcheck.test) ? healthcheck.test.join(' ') : String(healthcheck.test);
    expect(test).toMatch(/rabbitmq-diagnostics/);
    for (const key of ['interval', 'timeout', 'retries', 'start_period']) expect(healthcheck, key).toHaveProperty(key);
  });

  it('rabbitmq publishes 5672 and 15672', () => {
    expect(containerPorts(rabbitmq)).toEqual(expect.arrayContaining([5672, 15672]));
  });

  it('rabbitmq keeps /var/lib/rabbitmq in a volume, under a fixed hostname (node name)', () => {
    const volumes = Array.isArray(rabbitmq.volumes) ? rabbitmq.volumes : [];
    const targets = volumes.map((volume) => (isDict(volume) ? String(volume.target) : String(volume).split(':')[1]));
    expect(targets).toContain('/var/lib/rabbitmq');
    expect(typeof rabbitmq.hostname).toBe('string');
  });

  it('worker connects to the compose broker', () => {
    expect(environmentOf(worker).AMQP_URL).toMatch(/^amqp:\/\/[^@]*@rabbitmq(:5672)?\/?$/);
  });
});

describe('docker-compose.yml accounts', () => {
  const setup = dict(services.setup, 'services.setup');

  it('a one-shot setup creates the accounts and declares the topology once the broker is healthy; the relay waits for it', () => {
    expect(dict(dict(setup.depends_on, 'setup.depends_on').rabbitmq, 'setup.depends_on.rabbitmq').condition).toBe('service_healthy');
    expect(String(setup.command)).toMatch(
      /accounts --format definitions[\s\S]*\/api\/definitions[\s\S]*callback-relay-admin[\s\S]*topology/,
    );
    for (const name of ['worker', 'ingest', 'console']) {
      const service = dict(services[name], `services.${name}`);
      expect(dict(dict(service.depends_on, `${name}.depends_on`).setup, `${name}.depends_on.setup`).condition).toBe(
        'service_completed_successfully',
      );
    }
  });

  it('each process connects with the account of its role, never guest', () => {
    for (const name of ['worker', 'ingest', 'console']) {
      expect(environmentOf(dict(services[name], `services.${name}`)).AMQP_URL).toMatch(
        new RegExp(`^amqp://callback-relay-${name}:[^@]+@rabbitmq:5672$`),
      );
    }
  });
});

describe('docker-compose.yml ingest', () => {
  const ingest = dict(services.ingest, 'services.ingest');

  it('runs the ingest from the worker image once the broker is healthy', () => {
    expect(ingest.command).toEqual(['node', 'dist/ingest/main.js']);
    expect(dict(dict(ingest.depends_on, 'ingest.depends_on').rabbitmq, 'ingest.depends_on.rabbitmq').condition).toBe('service_healthy');
    expect(environmentOf(ingest).AMQP_URL).toMatch(/^amqp:\/\/[^@]*@rabbitmq(:5672)?\/?$/);
    expect(environmentOf(ingest).INGEST_TOKENS).toBeTruthy();
  });

  it('listens on every interface of its container, so the published port reaches it (INGEST_HOST defaults to loopback)', () => {
    expect(environmentOf(ingest).INGEST_HOST).toBe('0.0.0.0');
    expect(configSchema.ingestHost.default).toBe('127.0.0.1');
  });

  it('stop_grace_period exceeds PUBLISH_TIMEOUT, so publishes under way settle on SIGTERM', () => {
    const publishMs = parseDuration(environmentOf(ingest).PUBLISH_TIMEOUT ?? '') ?? configSchema.publishTimeout.default;
    expect(composeDurationMs(String(ingest.stop_grace_period))).toBeGreaterThan(publishMs);
  });
});

describe('docker-compose.yml console', () => {
  const consoleService = dict(services.console, 'services.console');

  it('runs the console from the worker image once the broker is healthy, with a token, and the workers keep P.history', () => {
    expect(consoleService.command).toEqual(['node', 'dist/console/main.js']);
    expect(dict(dict(consoleService.depends_on, 'console.depends_on').rabbitmq, 'console.depends_on.rabbitmq').condition).toBe(
      'service_healthy',
    );
    expect(environmentOf(consoleService).AMQP_URL).toMatch(/^amqp:\/\/[^@]*@rabbitmq(:5672)?\/?$/);
    expect(environmentOf(consoleService).CONSOLE_TOKENS).toMatch(/^[\w.-]+:\S{24,}$/);
    expect(weakTokenProblem(String(environmentOf(consoleService).CONSOLE_TOKENS).split(':')[1] ?? '')).toBeUndefined();
    // Reached through the published port, which stays on the host's loopback.
    expect(environmentOf(consoleService).CONSOLE_HOST).toBe('0.0.0.0');
    expect(consoleService.ports).toEqual([expect.stringMatching(/^127\.0\.0\.1:/)]);
    expect(environmentOf(worker).HISTORY).toBe('on');
  });
});

describe('Dockerfile (worker)', () => {
  it('is multi-stage and its final stage is node:24-slim', () => {
    expect(rootStages.length).toBeGreaterThanOrEqual(2);
    expect(fromImage(finalStage[0] ?? { keyword: 'FROM', args: '' })).toBe('node:24-slim');
  });

  it('runs the final stage as a non-root user', () => {
    const user = finalStage
      .filter((instruction) => instruction.keyword === 'USER')
      .at(-1)
      ?.args.trim();
    expect(user, 'final stage needs a USER').toBeDefined();
    expect(user?.split(':')[0]).not.toMatch(/^(root|0)$/);
  });

  it('installs production dependencies only in the final stage', () => {
    const runs = finalStage.filter((instruction) => instruction.keyword === 'RUN').map((instruction) => instruction.args);
    expect(runs.some((run) => /\bnpm ci\b/.test(run) && /--omit=dev\b/.test(run))).toBe(true);
  });

  it('does not copy test/ into the image', () => {
    const dockerignore = read('.dockerignore')
      .split(/\r?\n/)
      .map((line) => line.trim());
    for (const instruction of rootDockerfile.filter((i) => i.keyword === 'COPY' || i.keyword === 'ADD')) {
      if (/--from=/.test(instruction.args)) continue;
      for (const source of copySources(instruction)) {
        expect(source, `${instruction.keyword} ${instruction.args}`).not.toMatch(/^(\.\/)?test(\/|$)/);
        if (source === '.' || source === './') expect(dockerignore).toContain('test');
      }
    }
  });

  it('starts node directly (exec form), so SIGTERM reaches the worker', () => {
    const start = finalStage.filter((instruction) => instruction.keyword === 'CMD' || instruction.keyword === 'ENTRYPOINT').at(-1);
    expect(start, 'final stage needs a CMD').toBeDefined();
    const argv = JSON.parse(start?.args ?? '[]') as string[];
    expect(argv[0]).toBe('node');
    expect(argv).toContain('dist/consumer/main.js');
  });

  it('.dockerignore keeps node_modules and dist out of the build context', () => {
    const dockerignore = read('.dockerignore')
      .split(/\r?\n/)
      .map((line) => line.trim().replace(/^\/|\/$/g, ''));
    expect(dockerignore).toEqual(expect.arrayContaining(['node_modules', 'dist', '.git']));
  });
});

describe('rabbitmq/ (broker image)', () => {
  it('FROM pins a versioned rabbitmq tag, not latest', () => {
    const image = fromImage(brokerDockerfile.find((instruction) => instruction.keyword === 'FROM') ?? { keyword: 'FROM', args: '' });
    const [name, tag] = expand(image, brokerArgs).split(':');
    expect(name).toBe('rabbitmq');
    expect(tag).toMatch(/^\d+\.\d+(\.\d+)?(-[a-z-]+)?$/);
  });

  it('builds the delayed-message plugin from its source at a pinned commit, verified before it is compiled', () => {
    expect(brokerArgs.DELAYED_PLUGIN_COMMIT, 'ARG DELAYED_PLUGIN_COMMIT=<40 hex digits>').toMatch(/^[0-9a-f]{40}$/);
    const run = brokerRuns.find((args) => args.includes('build-delayed-plugin.sh')) ?? '';
    expect(run, 'a RUN that calls build-delayed-plugin.sh').not.toBe('');
    const fetch =
      /git\b[^;]*\bfetch\b[^;]*https:\/\/github\.com\/rabbitmq\/rabbitmq-delayed-message-exchange(\.git)?\s+"?\$DELAYED_PLUGIN_COMMIT"?/.exec(
        run,
      );
    expect(fetch, 'git fetch of the upstream repository at $DELAYED_PLUGIN_COMMIT').not.toBeNull();
    const check = /"\$(\w+)"\s*!=\s*"\$DELAYED_PLUGIN_COMMIT"/.exec(run);
    expect(check, 'a comparison of the checked-out commit with $DELAYED_PLUGIN_COMMIT').not.toBeNull();
    expect(run).toMatch(new RegExp(`\\b${check?.[1] ?? '-'}=\\$\\(git\\b[^)]*\\brev-parse HEAD\\)`));
    const at = (text: string): number => run.indexOf(text);
    expect(at(fetch?.[0] ?? '-')).toBeLessThan(at(check?.[0] ?? '-'));
    expect(at(check?.[0] ?? '-')).toBeLessThan(at('build-delayed-plugin.sh'));
  });

  it('every RUN is valid /bin/sh (what Docker runs it with)', () => {
    for (const run of brokerRuns) {
      const check = spawnSync('sh', ['-n', '-c', run], { encoding: 'utf8' });
      expect(check.status, `${check.stderr}\nRUN ${run}`).toBe(0);
    }
  });

  it('downloads nothing unverified: no release files, no ADD of a URL', () => {
    for (const { keyword, args } of brokerDockerfile) {
      expect(`${keyword} ${args}`).not.toMatch(/\b(curl|wget)\b/);
      if (keyword === 'ADD') expect(args).not.toMatch(/https?:\/\//);
    }
  });

  it('leaves the plugin out by default (4.3 cannot run it), and the image then drops it from enabled_plugins', () => {
    expect(brokerArgs.DELAYED_PLUGIN).toBe('off');
    const run = brokerRuns.find((args) => args.includes('build-delayed-plugin.sh')) ?? '';
    expect(run).toMatch(/\boff\)[^;]*;[^;]*exit 0/);
    const final = brokerStages.at(-1) ?? [];
    expect(final.some(({ keyword, args }) => keyword === 'COPY' && /--from=delayed-plugin\b/.test(args))).toBe(true);
    expect(
      final.some(
        ({ keyword, args }) =>
          keyword === 'RUN' && /sed -i [^;]*rabbitmq_delayed_message_exchange[^;]*\/etc\/rabbitmq\/enabled_plugins/.test(args),
      ),
    ).toBe(true);
  });

  it('the build script it copies is in its build context and executable', () => {
    const copy = (brokerStages[0] ?? []).find(({ keyword, args }) => keyword === 'COPY' && args.includes('build-delayed-plugin.sh'));
    expect(copy, 'COPY build-delayed-plugin.sh').toBeDefined();
    for (const source of copySources(copy ?? { keyword: 'COPY', args: '' })) {
      expect(statSync(repoFile(`rabbitmq/${source}`)).mode & 0o111, source).not.toBe(0);
    }
  });

  it('compiles in the broker image itself, and checks that the plugin release matches its major.minor', () => {
    const images = brokerStages.map((stage) => expand(fromImage(stage[0] ?? { keyword: 'FROM', args: '' }), brokerArgs));
    expect(new Set(images).size, images.join(', ')).toBe(1);
    const brokerMinor = /^rabbitmq:(\d+\.\d+)/.exec(images[0] ?? '')?.[1];
    expect(brokerMinor, 'the rabbitmq tag names its major.minor').toBeDefined();
    // The default broker (4.3) has no plugin release; the default release is for 4.2, the last series the
    // plugin supports, and the stage refuses a release whose major.minor is not the broker's.
    expect(brokerArgs.DELAYED_PLUGIN_VERSION?.split('.').slice(0, 2).join('.')).toBe('4.2');
    const run = brokerRuns.find((args) => args.includes('build-delayed-plugin.sh')) ?? '';
    expect(run).toMatch(/"\$\{DELAYED_PLUGIN_VERSION%\.\*\}"\.\*\)/);
  });

  it('enabled_plugins lists management, prometheus and the delayed exchange, ending with a period', () => {
    const text = read('rabbitmq/enabled_plugins').trim();
    expect(text).toMatch(/^\[[\s\S]*\]\.$/);
    const plugins = text
      .slice(1, text.lastIndexOf(']'))
      .split(',')
      .map((plugin) => plugin.trim());
    expect(plugins).toEqual(expect.arrayContaining(['rabbitmq_management', 'rabbitmq_prometheus', 'rabbitmq_delayed_message_exchange']));
  });

  it('stops in order: the entrypoint runs before-stop.sh on SIGTERM, then the official entrypoint and rabbitmq-server', () => {
    const final = brokerStages.at(-1) ?? [];
    const last = (keyword: string) => final.filter((instruction) => instruction.keyword === keyword).at(-1)?.args;
    expect(JSON.parse(last('ENTRYPOINT') ?? '[]')).toEqual(['stop-in-order.sh', 'docker-entrypoint.sh']);
    expect(JSON.parse(last('CMD') ?? '[]')).toEqual(['rabbitmq-server']);
    const copy = final.find(({ keyword, args }) => keyword === 'COPY' && args.includes('stop-in-order.sh'));
    expect(copy?.args).toContain('before-stop.sh');
    expect(copy && copySources(copy).every((source) => existsSync(repoFile(`rabbitmq/${source}`)))).toBe(true);
  });

  it('rabbitmq.conf lets guest connect from outside the container (the test harness needs it)', () => {
    const settings = read('rabbitmq/rabbitmq.conf')
      .split(/\r?\n/)
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'));
    expect(settings).toContain('loopback_users = none');
  });

  it('the Dockerfile copies enabled_plugins, rabbitmq.conf and advanced.config into /etc/rabbitmq/', () => {
    const copies = brokerDockerfile.filter((instruction) => instruction.keyword === 'COPY').map((instruction) => instruction.args);
    for (const file of ['enabled_plugins', 'rabbitmq.conf', 'advanced.config']) {
      expect(copies.some((args) => args.includes(file) && /\/etc\/rabbitmq\/?$/.test(args))).toBe(true);
    }
  });
});

describe('container scripts', () => {
  // The first two do not run in CI as a whole: the smoke run needs a Docker engine, the plugin build runs
  // inside the image build (its steps are exercised by test/integration/delayed-plugin-build.test.ts).
  // before-stop.sh runs in test/scenarios/plugin-restart.test.ts.
  const scripts = ['scripts/compose-smoke.sh', 'rabbitmq/build-delayed-plugin.sh', 'rabbitmq/before-stop.sh', 'rabbitmq/stop-in-order.sh'];
  const hasShellcheck = spawnSync('sh', ['-c', 'command -v shellcheck'], { encoding: 'utf8' }).status === 0;

  it.each(scripts)('%s is executable and parses (bash -n)', (script) => {
    expect(statSync(repoFile(script)).mode & 0o111).not.toBe(0);
    const check = spawnSync('bash', ['-n', repoFile(script)], { encoding: 'utf8' });
    expect(check.status, check.stderr).toBe(0);
  });

  it.skipIf(!hasShellcheck).each(scripts)(
    `%s passes shellcheck${hasShellcheck ? '' : ' (skipped: shellcheck not installed)'}`,
    (script) => {
      const check = spawnSync('shellcheck', [repoFile(script)], { encoding: 'utf8' });
      expect(check.status, check.stdout).toBe(0);
    },
  );
});

describe('examples', () => {
  it('the example receiver exists and compose runs it', () => {
    expect(existsSync(repoFile('examples/receiver.mjs'))).toBe(true);
    const receiver = dict(services.receiver, 'services.receiver');
    expect(receiver.command).toEqual(['node', '/examples/receiver.mjs']);
  });
});
