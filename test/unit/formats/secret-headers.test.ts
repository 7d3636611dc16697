import { describe, expect, it } from 'vitest';
import { isSecretHeader, maskHeaders } from '../../../src/formats/secret-headers.js';

describe('isSecretHeader', () => {
  it.each([
    'Authorization',
    'proxy-authorization',
    'Cookie',
    'Set-Cookie',
    'X-Api-Key',
    'apikey',
    'api-key',
    'X-Auth-Key',
    'X-Auth-Email',
    'Ocp-Apim-Subscription-Key',
    'X-Amz-Security-Token',
    'x-hub-signature-256',
    'X-Webhook-Secret',
    'x-client-password',
    'X-Session-Id',
    'X-Credentials',
    'X-CSRF-Token',
    'PRIVATE-TOKEN',
    'x-db-pwd',
  ])('hides %s', (name) => expect(isSecretHeader(name)).toBe(true));

  it.each([
    'content-type',
    'x-tenant',
    'x-request-id',
    'user-agent',
    'x-callback-attempt',
    'x-callback-target-key',
    'X-Callback-Last-Status',
    'x-death',
    'x-first-death-reason',
    'x-delay',
    'traceparent',
    'x-passthrough',
  ])('shows %s', (name) => expect(isSecretHeader(name)).toBe(false));
});

describe('maskHeaders', () => {
  it('hides the values of secret headers, keeping every name and the other values', () => {
    const amqp = { 'x-callback-attempts': 3, 'x-death': [{ count: 1 }], 'X-Api-Key': 'k' };
    expect(maskHeaders(amqp)).toEqual({ 'x-callback-attempts': 3, 'x-death': [{ count: 1 }], 'X-Api-Key': '[hidden]' });
    expect(maskHeaders({ authorization: 'Bearer x', 'x-tenant': 'acme' })).toEqual({ authorization: '[hidden]', 'x-tenant': 'acme' });
    expect(amqp['X-Api-Key']).toBe('k');
  });
});
