import { describe, it, expect } from 'vitest';
import { checkAddress, parseCidr, parseCidrList, type AddressPolicy } from '../../../src/http/address-policy.js';
import { RelayError } from '../../../src/errors.js';

const policy = (overrides: { strict?: boolean; allow?: string; deny?: string } = {}): AddressPolicy => ({
  strict: overrides.strict ?? false,
  allow: parseCidrList(overrides.allow ?? '', 'TARGET_ALLOW'),
  deny: parseCidrList(overrides.deny ?? '', 'TARGET_DENY'),
});

const reasonOf = (ip: string, p: AddressPolicy = policy()): string | undefined => {
  const verdict = checkAddress(ip, p);
  return verdict.allowed ? undefined : verdict.reason;
};

describe('checkAddress: default mode', () => {
  it.each(['169.254.169.254', '169.254.0.1', '169.254.255.255', 'fe80::1', 'febf:ffff::1', 'fe80::1%eth0'])(
    'refuses link-local %s as cloud metadata',
    (ip) => expect(reasonOf(ip)).toBe(`${ip} is link-local (cloud metadata)`),
  );

  it.each(['0.0.0.0', '0.1.2.3', '::'])('refuses unspecified %s', (ip) => {
    expect(reasonOf(ip)).toMatch(/is unspecified/);
  });

  it.each(['fd00:ec2::254', '100.100.100.200'])('refuses the metadata address %s outside link-local', (ip) => {
    expect(reasonOf(ip)).toBe(`${ip} is a cloud metadata address`);
  });

  it.each([
    '127.0.0.1',
    '::1',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    'fd12::1',
    '100.64.0.1',
    '93.184.216.34',
    '2606:4700::1111',
  ])('allows %s (private and loopback are legitimate internal targets)', (ip) =>
    expect(checkAddress(ip, policy())).toEqual({ allowed: true }),
  );

  it.each(['169.253.255.255', '169.255.0.0', '172.32.0.1', 'fec0::1', '198.18.0.1', '192.0.0.8', '240.0.0.1'])(
    'allows %s just outside the built-in ranges',
    (ip) => {
      expect(checkAddress(ip, policy())).toEqual({ allowed: true });
    },
  );

  it('refuses what is not an IP address (fail closed)', () => {
    expect(reasonOf('metadata.google.internal')).toBe('metadata.google.internal is not an IP address');
    expect(reasonOf('')).toMatch(/not an IP address/);
  });
});

describe('checkAddress: IPv4 inside IPv6', () => {
  it.each(['::ffff:169.254.169.254', '::ffff:a9fe:a9fe', '0:0:0:0:0:ffff:a9fe:a9fe', '64:ff9b::169.254.169.254', '64:ff9b::a9fe:a9fe'])(
    'judges %s by its IPv4 address',
    (ip) => expect(reasonOf(ip)).toBe(`${ip} (169.254.169.254) is link-local (cloud metadata)`),
  );

  it('refuses mapped unspecified and, in strict mode, mapped loopback', () => {
    expect(reasonOf('::ffff:0.0.0.0')).toMatch(/unspecified/);
    expect(checkAddress('::ffff:127.0.0.1', policy())).toEqual({ allowed: true });
    expect(reasonOf('::ffff:7f00:1', policy({ strict: true }))).toBe('::ffff:7f00:1 (127.0.0.1) is loopback, refused in strict mode');
  });

  it('allows a mapped public address and leaves other IPv6 alone', () => {
    expect(checkAddress('::ffff:93.184.216.34', policy())).toEqual({ allowed: true });
    expect(checkAddress('2001:db8::a9fe:a9fe', policy())).toEqual({ allowed: true });
  });

  it.each([
    ['2002:a9fe:a9fe::', '169.254.169.254'],
    ['2002:a9fe:a9fe:1::1', '169.254.169.254'],
    ['::169.254.169.254', '169.254.169.254'],
    ['::a9fe:a9fe', '169.254.169.254'],
  ])('judges 6to4 and IPv4-compatible %s by its IPv4 address', (ip, embedded) => {
    expect(reasonOf(ip)).toBe(`${ip} (${embedded}) is link-local (cloud metadata)`);
  });

  it.each([
    ['64:ff9b:1::a9fe:a9fe', '/96'],
    ['64:ff9b:1:a9fe:a9:fe00::', '/48'],
    ['64:ff9b:1:a9:fe:a9fe::', '/56'],
    ['64:ff9b:1:0:a9:fea9:fe00:0', '/64'],
    ['64:ff9b:1::a9fe:a9fe:0', '/72'],
    ['64:ff9b:1::a9:fea9:fe00', '/80'],
  ])('judges local-use NAT64 %s (prefix %s) by its IPv4 address', (ip) => {
    expect(reasonOf(ip)).toMatch(/\(.*169\.254\.169\.254.*\) is link-local \(cloud metadata\)$/);
  });

  it('judges 6to4, IPv4-compatible and local-use NAT64 loopback and private addresses in strict mode', () => {
    const strict = policy({ strict: true });
    expect(reasonOf('2002:7f00:1::', strict)).toBe('2002:7f00:1:: (127.0.0.1) is loopback, refused in strict mode');
    expect(reasonOf('2002:c0a8:101::1', strict)).toBe('2002:c0a8:101::1 (192.168.1.1) is private, refused in strict mode');
    expect(reasonOf('::10.0.0.1', strict)).toBe('::10.0.0.1 (10.0.0.1) is private, refused in strict mode');
    expect(reasonOf('64:ff9b:1::a00:1', strict)).toMatch(/\(.*10\.0\.0\.1.*\) is private, refused in strict mode$/);
    expect(checkAddress('2002:5db8:d822::1', strict)).toEqual({ allowed: true });
    expect(checkAddress('64:ff9b:1::5db8:d822', strict)).toEqual({ allowed: true });
  });

  it('keeps :: and ::1 out of the IPv4-compatible range', () => {
    expect(reasonOf('::1', policy({ strict: true }))).toBe('::1 is loopback, refused in strict mode');
    expect(checkAddress('::1', policy())).toEqual({ allowed: true });
    expect(reasonOf('::')).toMatch(/^:: is unspecified/);
  });

  it('applies IPv4 list entries to mapped addresses', () => {
    expect(reasonOf('::ffff:203.0.113.9', policy({ deny: '203.0.113.0/24' }))).toMatch(/deny list \(203\.0\.113\.0\/24\)/);
    expect(checkAddress('::ffff:169.254.169.254', policy({ allow: '169.254.169.254' }))).toEqual({ allowed: true });
  });
});

describe('checkAddress: strict mode', () => {
  const strict = policy({ strict: true });

  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.20.1.1', 'private'],
    ['192.168.0.10', 'private'],
    ['fc00::1', 'private'],
    ['fdff:ffff::1', 'private'],
    ['100.64.0.1', 'shared address space (CGNAT)'],
    ['100.127.255.255', 'shared address space (CGNAT)'],
    ['198.18.0.1', 'special-purpose (benchmarking, IETF protocol assignments or reserved)'],
    ['198.19.255.255', 'special-purpose (benchmarking, IETF protocol assignments or reserved)'],
    ['192.0.0.8', 'special-purpose (benchmarking, IETF protocol assignments or reserved)'],
    ['240.0.0.1', 'special-purpose (benchmarking, IETF protocol assignments or reserved)'],
    ['255.255.255.255', 'special-purpose (benchmarking, IETF protocol assignments or reserved)'],
  ])('refuses %s as %s', (ip, label) => {
    expect(reasonOf(ip, strict)).toBe(`${ip} is ${label}, refused in strict mode`);
  });

  it('still refuses link-local, with the link-local reason', () => {
    expect(reasonOf('169.254.169.254', strict)).toBe('169.254.169.254 is link-local (cloud metadata)');
  });

  it.each(['93.184.216.34', '100.128.0.1', '2606:4700::1111', '11.0.0.1', '198.17.255.255', '198.20.0.1', '192.0.1.1', '239.255.255.255'])(
    'allows public %s',
    (ip) => {
      expect(checkAddress(ip, strict)).toEqual({ allowed: true });
    },
  );
});

describe('checkAddress: allow and deny lists', () => {
  it('refuses addresses in the deny list, naming the entry', () => {
    const p = policy({ deny: '203.0.113.0/24, 2001:db8::/32' });
    expect(reasonOf('203.0.113.7', p)).toBe('203.0.113.7 is in the deny list (203.0.113.0/24)');
    expect(reasonOf('2001:db8:1::5', p)).toBe('2001:db8:1::5 is in the deny list (2001:db8::/32)');
    expect(checkAddress('203.0.114.1', p)).toEqual({ allowed: true });
  });

  it('lets the allow list win over link-local, strict mode and the deny list', () => {
    const p = policy({ strict: true, allow: '169.254.170.2/32, 10.0.0.0/16, fd00::/16', deny: '10.0.0.0/8' });
    expect(checkAddress('169.254.170.2', p)).toEqual({ allowed: true });
    expect(checkAddress('10.0.5.5', p)).toEqual({ allowed: true });
    expect(checkAddress('fd00::5', p)).toEqual({ allowed: true });
    expect(reasonOf('10.1.0.1', p)).toBe('10.1.0.1 is in the deny list (10.0.0.0/8)');
    expect(reasonOf('169.254.169.254', p)).toMatch(/link-local/);
  });

  it('keeps always-refused ranges refused when an allow entry merely overlaps them', () => {
    const cgnat = policy({ strict: true, allow: '100.64.0.0/10' });
    expect(checkAddress('100.64.1.1', cgnat)).toEqual({ allowed: true });
    expect(reasonOf('100.100.100.200', cgnat)).toBe(
      '100.100.100.200 is a cloud metadata address, refused even though TARGET_ALLOW covers it: only an entry naming 100.100.100.200/32 or a range inside it opens it',
    );
    const everything = policy({ allow: '0.0.0.0/0, ::/0' });
    expect(checkAddress('93.184.216.34', everything)).toEqual({ allowed: true });
    for (const ip of ['169.254.169.254', '0.0.0.0', 'fe80::1', 'fd00:ec2::254', '::ffff:169.254.169.254', '::']) {
      expect(checkAddress(ip, everything), ip).toMatchObject({ allowed: false });
    }
    expect(reasonOf('169.254.169.254', policy({ allow: '169.0.0.0/8' }))).toMatch(/link-local.*only an entry naming 169.254.0.0\/16/);
    expect(checkAddress('fd00:ec2::254', policy({ strict: true, allow: 'fd00::/8' }))).toMatchObject({ allowed: false });
  });

  it('opens an always-refused range for an entry naming it or a range inside it', () => {
    expect(checkAddress('100.100.100.200', policy({ allow: '100.64.0.0/10, 100.100.100.200' }))).toEqual({ allowed: true });
    expect(checkAddress('169.254.169.254', policy({ allow: '169.254.0.0/16' }))).toEqual({ allowed: true });
    expect(checkAddress('169.254.170.2', policy({ allow: '169.254.170.0/24' }))).toEqual({ allowed: true });
    expect(reasonOf('169.254.169.254', policy({ allow: '169.254.170.0/24' }))).toMatch(/link-local/);
    expect(checkAddress('fe80::1', policy({ allow: 'fe80::/64' }))).toEqual({ allowed: true });
    expect(checkAddress('169.254.170.2', policy({ allow: '169.254.170.2:80' }), 80)).toEqual({ allowed: true });
    expect(checkAddress('169.254.170.2', policy({ allow: '169.254.170.2:80' }), 81)).toMatchObject({ allowed: false });
  });

  it('allows loopback in strict mode when allow-listed', () => {
    expect(checkAddress('127.0.0.1', policy({ strict: true, allow: '127.0.0.1' }))).toEqual({ allowed: true });
    expect(reasonOf('127.0.0.2', policy({ strict: true, allow: '127.0.0.1' }))).toMatch(/loopback/);
  });
});

describe('checkAddress: ports', () => {
  // docker-compose's old setting: every port of the private ranges, the broker's included.
  const compose = policy({ strict: true, allow: '172.16.0.0/12:8080,9000, 192.168.0.0/16' });

  it('a ported allow entry permits only its ports; other ports fall through to the other rules', () => {
    expect(checkAddress('172.18.0.5', compose, 8080)).toEqual({ allowed: true });
    expect(checkAddress('172.18.0.5', compose, 9000)).toEqual({ allowed: true });
    expect(checkAddress('172.18.0.5', compose, 15672)).toEqual({ allowed: false, reason: '172.18.0.5 is private, refused in strict mode' });
    expect(checkAddress('172.18.0.5', compose)).toMatchObject({ allowed: false });
  });

  it('an entry without ports keeps its old meaning: every port', () => {
    expect(checkAddress('192.168.1.1', compose, 15672)).toEqual({ allowed: true });
  });

  it('a ported deny entry refuses only its ports', () => {
    const denying = policy({ deny: '10.0.0.0/8:22' });
    expect(checkAddress('10.1.1.1', denying, 22)).toEqual({ allowed: false, reason: '10.1.1.1 is in the deny list (10.0.0.0/8:22)' });
    expect(checkAddress('10.1.1.1', denying, 443)).toEqual({ allowed: true });
  });

  it('refuses the broker endpoints whatever the allow list says, on their ports only', () => {
    const withBroker: AddressPolicy = { ...policy({ allow: '0.0.0.0/0' }), broker: parseCidrList('172.18.0.2/32:5672,15672', 'AMQP_URL') };
    expect(checkAddress('172.18.0.2', withBroker, 15672)).toEqual({
      allowed: false,
      reason: "172.18.0.2 port 15672 is the relay's own broker (172.18.0.2/32:5672,15672), refused whatever TARGET_ALLOW says",
    });
    expect(checkAddress('::ffff:172.18.0.2', withBroker, 5672)).toMatchObject({ allowed: false });
    expect(checkAddress('172.18.0.2', withBroker, 8080)).toEqual({ allowed: true });
    expect(checkAddress('172.18.0.3', withBroker, 15672)).toEqual({ allowed: true });
  });
});

describe('parseCidr and parseCidrList', () => {
  it('parses IPv4, IPv6 and bare addresses', () => {
    expect(parseCidr('10.0.0.0/8', 'F')).toEqual({ address: '10.0.0.0', prefix: 8, family: 'ipv4', text: '10.0.0.0/8' });
    expect(parseCidr(' fd00::/8 ', 'F')).toEqual({ address: 'fd00::', prefix: 8, family: 'ipv6', text: 'fd00::/8' });
    expect(parseCidr('192.0.2.1', 'F').text).toBe('192.0.2.1/32');
    expect(parseCidr('::1', 'F').text).toBe('::1/128');
    expect(parseCidr('0.0.0.0/0', 'F').prefix).toBe(0);
  });

  it('splits comma-separated lists and skips empty entries', () => {
    expect(parseCidrList('10.0.0.0/8,, 192.168.0.0/16 ,', 'F').map((c) => c.text)).toEqual(['10.0.0.0/8', '192.168.0.0/16']);
    expect(parseCidrList(['::1/128'], 'F')).toHaveLength(1);
    expect(parseCidrList('', 'F')).toEqual([]);
    expect(parseCidrList(undefined, 'F')).toEqual([]);
  });

  it.each([
    '10.0.0.0/33',
    '::/129',
    '10.0.0/8',
    'example.com',
    '10.0.0.0/',
    '10.0.0.0/8/8',
    '/8',
    '10.0.0.0/-1',
    '10.0.0.0/x',
    'fe80::1%eth0/64',
  ])('rejects %j with CR_ERR_CONFIG naming the field and the entry', (entry) => {
    let caught: unknown;
    try {
      parseCidrList(`10.0.0.0/8,${entry}`, 'TARGET_DENY');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(RelayError);
    const error = caught as RelayError;
    expect(error.code).toBe('CR_ERR_CONFIG');
    expect(error.field).toBe('TARGET_DENY');
    expect(error.message).toContain('TARGET_DENY');
    expect(error.message).toContain(`"${entry}"`);
  });
});
