import { describe, expect, it } from 'vitest';
import { RelayError } from '../../../src/errors.js';
import { brokerWentAway, queueNotStartedYet } from '../../../src/topology/connect-topology.js';

describe('queueNotStartedYet: the one refusal of a declaration that is tried again', () => {
  const brokerError = (code: number, classId: number, methodId: number) => Object.assign(new Error('closed'), { code, classId, methodId });
  const topologyError = (cause: unknown) => new RelayError('CR_ERR_TOPOLOGY', 'could not declare', { cause });

  it("is the broker's 404 to a queue.declare (a quorum queue another process is still starting)", () => {
    expect(queueNotStartedYet(topologyError(brokerError(404, 50, 10)))).toBe(true);
  });

  it('is nothing else: an inequivalent argument, a 404 to another method, no cause', () => {
    expect(queueNotStartedYet(topologyError(brokerError(406, 50, 10)))).toBe(false);
    expect(queueNotStartedYet(topologyError(brokerError(404, 50, 20)))).toBe(false);
    expect(queueNotStartedYet(topologyError(undefined))).toBe(false);
    expect(queueNotStartedYet(new Error('ECONNREFUSED'))).toBe(false);
    expect(queueNotStartedYet(undefined)).toBe(false);
  });
});

describe('brokerWentAway: a declaration cut short by the broker, which a starting worker tries again', () => {
  const topologyError = (cause: unknown) => new RelayError('CR_ERR_TOPOLOGY', 'could not declare', { cause });

  it('is a channel ended without a reply, a connection forced closed (320), a refused or reset socket', () => {
    expect(brokerWentAway(topologyError(new Error('Channel ended, no reply will be forthcoming')))).toBe(true);
    expect(brokerWentAway(topologyError(Object.assign(new Error('forced'), { code: 320 })))).toBe(true);
    expect(brokerWentAway(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(true);
  });

  it('is not a refusal: an inequivalent argument (406), access refused (403), a missing exchange (404)', () => {
    expect(brokerWentAway(topologyError(Object.assign(new Error('x'), { code: 406 })))).toBe(false);
    expect(brokerWentAway(topologyError(Object.assign(new Error('x'), { code: 403 })))).toBe(false);
    expect(brokerWentAway(topologyError(Object.assign(new Error('x'), { code: 404, classId: 50, methodId: 20 })))).toBe(false);
  });
});
