import pino, { type Logger, type LoggerOptions } from 'pino';
import { maskUrl } from './formats/mask-url.js';
import { maskHeaders } from './formats/secret-headers.js';
import { chooseLogFormat, type LogFormat, type LogFormatSetting } from './log-format.js';

export type { Logger };

const REDACT = ['amqpUrl', '*.amqpUrl', 'headers.authorization', '*.headers.authorization', 'body', '*.body'];

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A log line's fields with a callback's `url` masked (maskUrl) and the values of secret `headers`
 * hidden (maskHeaders), the rules the console and the CLI show them by. Pure; a line without either
 * is returned as is.
 */
export function maskLogFields(fields: Record<string, unknown>): Record<string, unknown> {
  let masked = fields;
  if (typeof fields.url === 'string') masked = { ...masked, url: maskUrl(fields.url) };
  if (isRecord(fields.headers)) masked = { ...masked, headers: maskHeaders(fields.headers) };
  return masked;
}

/**
 * pino's options for `format`. Pretty lines go through pino-pretty as pino's own transport (a worker
 * thread writing to stdout), so the main thread formats nothing; redaction happens before either.
 */
export function loggerOptions(level: string, name: string, format: LogFormat): LoggerOptions {
  const options: LoggerOptions = { name, level, redact: { paths: REDACT, censor: '[redacted]' }, formatters: { log: maskLogFields } };
  if (format === 'json') return options;
  return {
    ...options,
    transport: { target: 'pino-pretty', options: { destination: 1, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } },
  };
}

/**
 * Logs on stdout: JSON lines by default (what the library has always written), or as `LOG_FORMAT`
 * says for the relay's own processes. Payloads are never logged by the relay; the redaction is a
 * second line of defence should a caller log an object carrying secrets.
 */
export function createLogger(level: string, name = 'callback-relay', format: LogFormatSetting = 'json'): Logger {
  return pino(loggerOptions(level, name, chooseLogFormat(format, process.stdout.isTTY === true)));
}
