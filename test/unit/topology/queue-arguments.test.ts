import { describe, it, expect } from 'vitest';
import { brokerFeatures, queueArguments } from '../../../src/topology/declare-list.js';

describe('queueArguments', () => {
  it('gives a plain quorum queue only its type', () => {
    expect(queueArguments({ type: 'quorum' })).toEqual({ 'x-queue-type': 'quorum' });
  });

  it('makes a dead-lettering quorum queue at-least-once with reject-publish overflow', () => {
    expect(queueArguments({ type: 'quorum', deadLetter: { exchange: 'cr.delay.03' }, messageTtlMs: 16_000 })).toEqual({
      'x-queue-type': 'quorum',
      'x-message-ttl': 16_000,
      'x-dead-letter-exchange': 'cr.delay.03',
      'x-dead-letter-strategy': 'at-least-once',
      'x-overflow': 'reject-publish',
    });
  });

  it('sets a dead-letter routing key only when given, including to the default exchange', () => {
    const args = queueArguments({ type: 'quorum', deadLetter: { exchange: '', routingKey: 'cr.work' } });
    expect(args['x-dead-letter-exchange']).toBe('');
    expect(args['x-dead-letter-routing-key']).toBe('cr.work');
    expect(queueArguments({ type: 'quorum', deadLetter: { exchange: 'x' } })).not.toHaveProperty('x-dead-letter-routing-key');
  });

  it('sets the delivery limit on quorum queues', () => {
    expect(queueArguments({ type: 'quorum', deliveryLimit: 10, deadLetter: { exchange: '', routingKey: 'cr.dead' } })).toEqual({
      'x-queue-type': 'quorum',
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': 'cr.dead',
      'x-dead-letter-strategy': 'at-least-once',
      'x-overflow': 'reject-publish',
      'x-delivery-limit': 10,
    });
  });

  it('gives classic queues no delivery limit, strategy or overflow', () => {
    expect(queueArguments({ type: 'classic', deliveryLimit: 10, messageTtlMs: 1_000, deadLetter: { exchange: 'cr.delay.00' } })).toEqual({
      'x-queue-type': 'classic',
      'x-message-ttl': 1_000,
      'x-dead-letter-exchange': 'cr.delay.00',
    });
  });

  it('keeps a TTL of 0', () => {
    expect(queueArguments({ type: 'classic', messageTtlMs: 0 })).toEqual({ 'x-queue-type': 'classic', 'x-message-ttl': 0 });
  });
});

describe('brokerFeatures', () => {
  it.each([
    ['3.10.8', true],
    ['3.10.0', true],
    ['3.13.7', true],
    ['4.1.0', true],
    ['4.0.0-rc.1', true],
    ['3.9.0', false],
    ['3.9.29', false],
    ['3.8.35', false],
    ['2.8.0', false],
  ])('reports quorum dead-lettering for %s as %s', (version, supported) => {
    expect(brokerFeatures(version)).toEqual({ version, quorumDeadLettering: supported });
  });

  it('treats an unreadable version as unsupported', () => {
    expect(brokerFeatures('').quorumDeadLettering).toBe(false);
    expect(brokerFeatures('unknown').quorumDeadLettering).toBe(false);
  });
});
