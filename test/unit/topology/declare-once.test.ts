import { describe, expect, it } from 'vitest';
import { RelayError } from '../../../src/errors.js';
import { queueNotStartedYet } from '../../../src/topology/declare-once.js';

describe('queueNotStartedYet: the one refusal of a declaration that is tried again', () => {
  const brokerError = (code: number, classId: number, methodId: number) => Object.assign(new Error('closed'), { code, classId, methodId });
  const topologyError = (cause: unknown) => new RelayError('CR_ERR_TOPOLOGY', 'could not declare', { cause });

  it('is the broker\'s 404 to a queue.declare (a quorum queue another process is still starting)', () => {
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
