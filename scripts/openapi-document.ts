/**
 * Prints the ingest's OpenAPI document, or with `--write` writes it to docs/openapi.json. It is built
 * from the schemas the server validates with, at the default INGEST_BATCH_MAX; a unit test fails when
 * the file differs from what `/openapi.json` serves.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { configSchema } from '../src/config/schema.js';
import { ingestSchemas, openApiDocument } from '../src/ingest/openapi.js';

const text = `${JSON.stringify(openApiDocument(ingestSchemas(configSchema.ingestBatchMax.default)), null, 2)}\n`;
if (process.argv.includes('--write')) writeFileSync(fileURLToPath(new URL('../docs/openapi.json', import.meta.url)), text);
else process.stdout.write(text);
