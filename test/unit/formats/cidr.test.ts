import { describe, expect, it } from 'vitest';
import { cidrListProblem, cidrProblem, parseCidrList } from '../../../src/formats/cidr.js';
import { configError } from '../../support/config-error.js';

describe('CIDR formats', () => {
  it('says what is wrong with the first bad entry, and nothing for a good list', () => {
    expect(cidrListProblem(' 10.0.0.0/8, ,fd00::/8')).toBeUndefined();
    expect(cidrListProblem('10.0.0.0/8,10.0.0.0/33,nope')).toBe('"10.0.0.0/33" is not a CIDR block (expected e.g. 10.0.0.0/8 or fd00::/8)');
    expect(cidrProblem('fe80::1%eth0')).toMatch(/is not a CIDR block/);
  });

  it('parsing throws CR_ERR_CONFIG naming the field', () => {
    expect(() => parseCidrList('nope', 'TARGET_DENY')).toThrow(expect.objectContaining({ code: 'CR_ERR_CONFIG', field: 'TARGET_DENY', message: 'TARGET_DENY: "nope" is not a CIDR block (expected e.g. 10.0.0.0/8 or fd00::/8)' }));
  });

  it('a setting names itself once, then the problem and the value', () => {
    expect(configError({ TARGET_ALLOW: '10.0.0.0/8,nope' }).message).toContain('TARGET_ALLOW (targetAllow): "nope" is not a CIDR block (expected e.g. 10.0.0.0/8 or fd00::/8): value was "10.0.0.0/8,nope"');
  });
});
