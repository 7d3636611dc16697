import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * JSON logs on stdout. Payloads are never logged by the relay; the redaction is a second line of
 * defence should a caller log an object carrying secrets.
 */
export function createLogger(level: string, name = 'callback-relay'): Logger {
  return pino({
    name,
    level,
    redact: { paths: ['amqpUrl', '*.amqpUrl', 'headers.authorization', '*.headers.authorization', 'body', '*.body'], censor: '[redacted]' },
  });
}
