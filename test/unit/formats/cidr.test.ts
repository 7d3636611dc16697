import { describe, expect, it } from 'vitest';
import { cidrListProblem, cidrProblem, coversPort, parseCidrList } from '../../../src/formats/cidr.js';
import { configError } from '../../support/config-error.js';

describe('CIDR formats', () => {
  it('says what is wrong with the first bad entry, and nothing for a good list', () => {
    expect(cidrListProblem(' 10.0.0.0/8, ,fd00::/8')).toBeUndefined();
    expect(cidrListProblem('10.0.0.0/8,10.0.0.0/33,nope')).toBe(
      '"10.0.0.0/33" is not a CIDR block (expected e.g. 10.0.0.0/8, 10.0.0.0/8:443,8443, [::1]:8080 or fd00::/8)',
    );
    expect(cidrProblem('fe80::1%eth0')).toMatch(/is not a CIDR block/);
  });

  it('an entry may name ports; further bare numbers continue its port list; an entry without ports covers every port', () => {
    const [web, bare, v6, bracket, host] = parseCidrList(
      '10.0.0.0/8:443,8443, 192.168.0.0/16, fd00::/8:80, [::1]:8080, 127.0.0.1:9000',
      'TARGET_ALLOW',
    );
    expect(web).toMatchObject({ address: '10.0.0.0', prefix: 8, ports: [443, 8443], text: '10.0.0.0/8:443,8443' });
    expect(bare).toEqual({ address: '192.168.0.0', prefix: 16, family: 'ipv4', text: '192.168.0.0/16' });
    expect(v6).toMatchObject({ address: 'fd00::', prefix: 8, family: 'ipv6', ports: [80] });
    expect(bracket).toMatchObject({ address: '::1', prefix: 128, ports: [8080] });
    expect(host).toMatchObject({ address: '127.0.0.1', prefix: 32, ports: [9000] });
    expect(coversPort(web!, 443)).toBe(true);
    expect(coversPort(web!, 15672)).toBe(false);
    expect(coversPort(bare!, 15672)).toBe(true);
  });

  it('refuses a bad port, and a bare number that follows an entry without ports', () => {
    expect(cidrListProblem('10.0.0.0/8:443,70000')).toMatch(/^"10.0.0.0\/8:443,70000" is not a CIDR block/);
    expect(cidrListProblem('10.0.0.0/8:0')).toMatch(/is not a CIDR block/);
    expect(cidrListProblem('10.0.0.0/8,443')).toMatch(/^"443" is not a CIDR block/);
    expect(cidrListProblem('fd00::1:443')).toBeUndefined();
    expect(parseCidrList('fd00::1:443', 'F')[0]).toMatchObject({ address: 'fd00::1:443', prefix: 128 });
  });

  it('parsing throws CR_ERR_CONFIG naming the field', () => {
    expect(() => parseCidrList('nope', 'TARGET_DENY')).toThrow(
      expect.objectContaining({
        code: 'CR_ERR_CONFIG',
        field: 'TARGET_DENY',
        message: 'TARGET_DENY: "nope" is not a CIDR block (expected e.g. 10.0.0.0/8, 10.0.0.0/8:443,8443, [::1]:8080 or fd00::/8)',
      }),
    );
  });

  it('a setting names itself once, then the problem and the value', () => {
    expect(configError({ TARGET_ALLOW: '10.0.0.0/8,nope' }).message).toContain(
      'TARGET_ALLOW (targetAllow): "nope" is not a CIDR block (expected e.g. 10.0.0.0/8, 10.0.0.0/8:443,8443, [::1]:8080 or fd00::/8): value was "10.0.0.0/8,nope"',
    );
  });
});
