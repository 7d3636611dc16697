import pino, { type Logger, type LoggerOptions } from 'pino';
import { chooseLogFormat, type LogFormat, type LogFormatSetting } from './log-format.js';

export type { Logger };

const REDACT = ['amqpUrl', '*.amqpUrl', 'headers.authorization', '*.headers.authorization', 'body', '*.body'];

/**
 * pino's options for `format`. Pretty lines go through pino-pretty as pino's own transport (a worker
 * thread writing to stdout), so the main thread formats nothing; redaction happens before either.
 */
export function loggerOptions(level: string, name: string, format: LogFormat): LoggerOptions {
  const options: LoggerOptions = { name, level, redact: { paths: REDACT, censor: '[redacted]' } };
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
