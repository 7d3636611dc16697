import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.js';
import { chooseLogFormat } from '../../src/log-format.js';
import { loggerOptions, maskLogFields } from '../../src/logger.js';
import { configError } from '../support/config-error.js';

describe('LOG_FORMAT', () => {
  it('auto: readable lines at a terminal, JSON lines when stdout is a pipe, a file or a container log', () => {
    expect(chooseLogFormat('auto', true)).toBe('pretty');
    expect(chooseLogFormat('auto', false)).toBe('json');
  });

  it('json and pretty are forced whatever stdout is', () => {
    for (const tty of [true, false]) {
      expect(chooseLogFormat('json', tty)).toBe('json');
      expect(chooseLogFormat('pretty', tty)).toBe('pretty');
    }
  });

  it('defaults to auto and rejects anything else, naming the setting and the value', () => {
    expect(loadConfig({}).logFormat).toBe('auto');
    expect(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    const error = configError({ LOG_FORMAT: 'text' });
    expect(error.code).toBe('CR_ERR_CONFIG');
    expect(error.message).toContain('LOG_FORMAT (logFormat)');
    expect(error.message).toContain('value was "text"');
  });
});

describe('logger options', () => {
  it('json writes pino JSON lines itself, with no transport', () => {
    expect(loggerOptions('info', 'callback-relay', 'json').transport).toBeUndefined();
  });

  it('pretty goes through pino-pretty as a pino transport to stdout, keeping the redaction', () => {
    const options = loggerOptions('info', 'callback-relay', 'pretty');
    expect(options.transport).toMatchObject({ target: 'pino-pretty', options: { destination: 1 } });
    expect(options.redact).toEqual(loggerOptions('info', 'callback-relay', 'json').redact);
    // The transport's worker thread loads the module by name: it must be a dependency that resolves.
    expect(() => createRequire(import.meta.url).resolve('pino-pretty')).not.toThrow();
  });
});

describe('maskLogFields', () => {
  it('masks a callback URL and hides secret header values; other fields untouched', () => {
    const fields = { id: 'x', url: 'https://u:p@a.example/h?token=abc', headers: { 'X-Api-Key': 'k', 'x-tenant': 'acme' } };
    expect(maskLogFields(fields)).toEqual({
      id: 'x',
      url: 'https://***@a.example/h?token=***',
      headers: { 'X-Api-Key': '[hidden]', 'x-tenant': 'acme' },
    });
    const plain = { id: 'x', target: 'https://a.example' };
    expect(maskLogFields(plain)).toBe(plain);
  });

  it('is the log formatter of both formats', () => {
    expect(loggerOptions('info', 'n', 'json').formatters?.log).toBe(maskLogFields);
    expect(loggerOptions('info', 'n', 'pretty').formatters?.log).toBe(maskLogFields);
  });
});
