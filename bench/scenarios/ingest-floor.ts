/**
 * The floor row of the ingest scenario: the cheapest an HTTP ingest on Node can be. A bare
 * `node:http` server, no framework, no token, no schema: JSON.parse, the library's publish(), 202
 * with the id only after the broker's confirm (as the ingest). Whatever this costs per POST, every
 * HTTP ingest in Node costs at least as much. Run (compiled, see bench-build.ts) with the relay's
 * configuration variables and INGEST_PORT; prints "listening" once it listens.
 */
import { createServer } from 'node:http';
import { loadConfig } from '../../src/config/load-config.js';
import { createLogger } from '../../src/logger.js';
import { createPublisher } from '../../src/producer/publisher.js';
import { declareOnce } from '../../src/topology/connect-topology.js';

const config = loadConfig();
// Publishers declare nothing: the topology step first, as a deployment runs it.
await declareOnce(config, createLogger('silent'));
const publisher = createPublisher(config, createLogger('silent'));

const answer = (res: import('node:http').ServerResponse, status: number, body: string): void => {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
};

const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    let callback;
    try {
      callback = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return answer(res, 400, '{"message":"not JSON"}');
    }
    publisher.publish(callback).then(
      ({ id }) => answer(res, 202, `{"id":${JSON.stringify(id)}}`),
      (error: Error) => answer(res, 503, JSON.stringify({ message: error.message })),
    );
  });
});
server.listen(config.ingestPort, '127.0.0.1', () => process.stdout.write('listening\n'));

process.once('SIGTERM', () => {
  server.close();
  void publisher.close().finally(() => process.exit(0));
});
