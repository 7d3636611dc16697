import { describe, it, expect } from 'vitest';
import { redactUrl } from '../../../src/config/redact-url.js';

describe('redactUrl', () => {
  it('replaces the credentials with ***', () => {
    expect(redactUrl('amqp://guest:secret@rabbit:5672/vhost')).toBe('amqp://***@rabbit:5672/vhost');
    expect(redactUrl('amqps://u:p%40ss@host')).toBe('amqps://***@host');
    expect(redactUrl('amqp://guest@rabbit')).toBe('amqp://***@rabbit');
  });

  it('leaves a URL without credentials unchanged', () => {
    expect(redactUrl('amqp://rabbit:5672')).toBe('amqp://rabbit:5672');
    expect(redactUrl('not a url')).toBe('not a url');
    expect(redactUrl('')).toBe('');
  });

  it('masks credentials even in text that does not parse as a URL', () => {
    expect(redactUrl('amqp://guest:secret@[::1')).toBe('amqp://***@[::1');
    expect(redactUrl('://guest:secret@host')).not.toContain('secret');
    expect(redactUrl('guest:secret@rabbit:5672')).toBe('***@rabbit:5672');
    expect(redactUrl('http://user:123?secret@host')).toBe('http://***@host');
  });

  it('masks up to the last @, so a password containing @ never leaks', () => {
    expect(redactUrl('amqp://u:p@ss@host')).toBe('amqp://***@host');
  });
});
