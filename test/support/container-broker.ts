import { fileURLToPath } from 'node:url';
import amqplib from 'amqplib';
import { GenericContainer, Wait, getContainerRuntimeClient } from 'testcontainers';
import { brokerImageSpec } from './broker-image.js';
import { freePort } from './free-port.js';
import type { LocalBroker } from './local-broker.js';

const RABBITMQ_DIR = fileURLToPath(new URL('../../rabbitmq', import.meta.url));

/** Every container the harness starts carries this label, its value the pid of the process that started it. */
export const OWNER_LABEL = 'callback-relay-test.owner';

/** A broker container of the harness: its id lets another process of the run restart it. */
export interface ContainerBroker extends LocalBroker {
  id: string;
  /** What the image was built from (RABBITMQ_IMAGE, DELAYED_PLUGIN, ...), for log lines. */
  image: string;
}

/** Whether a Docker engine answers (the client alone is not enough). */
export async function dockerAnswers(): Promise<boolean> {
  try {
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

/**
 * The project's broker image (`rabbitmq/`, built from the RABBITMQ_IMAGE / DELAYED_PLUGIN* variables:
 * broker-image.ts) in a container. A restart is a container restart: SIGTERM to the image's
 * entrypoint (stop-in-order.sh: the plugin's scheduler first, then the broker), and a boot on the
 * same data, as `docker restart` does to a deployed broker.
 *
 * No reaper container (testcontainers' Ryuk) is assumed: it is pulled from a registry, which is not
 * always reachable (TESTCONTAINERS_RYUK_DISABLED=true). `stop` removes the container, and a start
 * first removes containers left by harness processes that no longer run (a run that was killed).
 */
export async function startContainerBroker(): Promise<ContainerBroker> {
  const spec = brokerImageSpec(process.env);
  // Read when the first container starts; the cleanup here stands in for the reaper.
  process.env.TESTCONTAINERS_RYUK_DISABLED ??= 'true';
  await removeOrphans();
  const image = await GenericContainer.fromDockerfile(RABBITMQ_DIR).withBuildArgs(spec.buildArgs).build(spec.tag, { deleteOnExit: false });
  // A fixed host port: Docker may give a published port a new number when the container restarts.
  const port = await freePort();
  const container = await image
    .withExposedPorts({ container: 5672, host: port })
    .withLabels({ [OWNER_LABEL]: String(process.pid) })
    .withWaitStrategy(Wait.forLogMessage(/Server startup complete/))
    .withStartupTimeout(180_000)
    .start();
  const url = `amqp://guest:guest@127.0.0.1:${port}`;
  await waitForAmqp(url, 60_000);
  return {
    id: container.getId(),
    image: spec.label,
    url,
    restart: () => restartContainer(container.getId(), url),
    stop: async () => {
      await container.stop({ remove: true, removeVolumes: true, timeout: 30_000 });
    },
  };
}

/** `docker restart` of a harness container (60 s to stop in order), then waits until AMQP answers again. */
export async function restartContainer(id: string, url: string): Promise<void> {
  const client = await getContainerRuntimeClient();
  await client.container.dockerode.getContainer(id).restart({ t: 60 });
  await waitForAmqp(url, 120_000);
}

/** Removes harness containers whose owning process is gone. */
async function removeOrphans(): Promise<void> {
  const client = await getContainerRuntimeClient();
  const found = await client.container.dockerode.listContainers({ all: true, filters: { label: [OWNER_LABEL] } });
  for (const info of found) {
    const owner = Number(info.Labels[OWNER_LABEL]);
    if (Number.isInteger(owner) && owner > 0 && processRuns(owner)) continue;
    await client.container.dockerode
      .getContainer(info.Id)
      .remove({ force: true, v: true })
      .catch(() => undefined);
  }
}

function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Resolves once an AMQP connection to `url` opens (a booting node logs "startup complete" a moment before). */
export async function waitForAmqp(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      // A time limit: whatever else listens on the port (not a broker) may never answer the AMQP header.
      const connection = await amqplib.connect(url, { timeout: 5_000 });
      await connection.close();
      return;
    } catch (error) {
      if (Date.now() > deadline)
        throw new Error(`the broker at ${url.replace(/\/\/[^@]*@/, '//')} did not accept connections within ${timeoutMs / 1000} s`, {
          cause: error,
        });
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  }
}

/** Runs a command in a harness container (e.g. rabbitmqctl); rejects with its output when it fails. */
export async function execInContainer(id: string, command: string[]): Promise<string> {
  const client = await getContainerRuntimeClient();
  const result = await client.container.exec(client.container.getById(id), command);
  if (result.exitCode !== 0) throw new Error(`${command.join(' ')} exited with ${result.exitCode}: ${result.output.trim()}`);
  return result.output;
}
