import { BlockList, isIP } from 'node:net';
import { coversPort, parseCidr, type Cidr } from '../formats/cidr.js';

export { parseCidr, parseCidrList, type Cidr } from '../formats/cidr.js';

/** Which resolved addresses a callback may be delivered to. Treat as immutable. */
export interface AddressPolicy {
  /**
   * `true` also refuses loopback, private (RFC 1918, fc00::/7, fec0::/10), CGNAT (100.64.0.0/10) and
   * special-purpose (198.18.0.0/15, 192.0.0.0/24, 240.0.0.0/4) addresses. TARGET_POLICY's default is `strict`: callback URLs usually come from
   * callers, and internal receivers are listed in `allow`.
   */
  readonly strict: boolean;
  /**
   * Permitted despite `deny` and the strict-only rules. The always-refused ranges (unspecified,
   * link-local, cloud metadata) stay refused unless an entry lies inside one of them (names that
   * range or a narrower one, e.g. `169.254.170.2`): an entry that merely overlaps one (`100.64.0.0/10`
   * holds the metadata address `100.100.100.200`) does not open it. `broker` is refused whatever this
   * says. An entry with ports permits only those ports. Default: `[]`.
   */
  readonly allow: readonly Cidr[];
  /** Refused in addition to the built-in rules (an entry with ports: only those ports). Default: `[]`. */
  readonly deny: readonly Cidr[];
  /**
   * The broker the worker is connected to, with its AMQP, management and Prometheus ports
   * (broker-endpoints.ts): refused whatever `allow` says, since a callback there could administer the
   * broker. Default: `[]`.
   */
  readonly broker?: readonly Cidr[];
}

export type AddressVerdict = { allowed: true } | { allowed: false; reason: string };

interface Rule {
  readonly label: string;
  readonly cidrs: readonly Cidr[];
  readonly blocks: BlockList;
}

const rule = (label: string, texts: readonly string[]): Rule => {
  const cidrs = texts.map((text) => parseCidr(text, 'built-in rule'));
  return { label, cidrs, blocks: toBlockList(cidrs) };
};

// Refused in every mode: nothing legitimate lives here, and the metadata services hand out cloud credentials.
const ALWAYS_DENIED: readonly Rule[] = [
  // Dialling 0.0.0.0 or :: reaches the local host on Linux, so "unspecified" is a loopback bypass.
  rule('unspecified ("this network"; dialling it reaches the local host)', ['0.0.0.0/8', '::/128']),
  rule('link-local (cloud metadata)', ['169.254.0.0/16', 'fe80::/10']),
  // Metadata endpoints outside link-local: AWS IMDS over IPv6 (inside fc00::/7) and Alibaba Cloud (inside CGNAT).
  rule('a cloud metadata address', ['fd00:ec2::254/128', '100.100.100.200/32']),
];

// Refused only in strict mode: internal services are a legitimate default target for callbacks.
const STRICT_DENIED: readonly Rule[] = [
  rule('loopback', ['127.0.0.0/8', '::1/128']),
  rule('private', ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7', 'fec0::/10']),
  // Shared address space: carrier NAT, but also overlay networks (Tailscale) - internal, hence strict-only.
  rule('shared address space (CGNAT)', ['100.64.0.0/10']),
  // RFC 6890 special-purpose blocks no public receiver lives in; 240.0.0.0/4 includes broadcast.
  rule('special-purpose (benchmarking, IETF protocol assignments or reserved)', ['198.18.0.0/15', '192.0.0.0/24', '240.0.0.0/4']),
];

/**
 * Decides whether `ip` (a resolved address or an IP literal, zone id allowed) may be dialled on TCP
 * `port`. Order: the broker's own endpoints; the allow list, except that an always-denied range is
 * opened only by an allow entry inside it (see `AddressPolicy.allow`); deny list, always-denied rules,
 * strict-only rules. An IPv6 address that carries an IPv4 address (mapped, compatible, NAT64, 6to4; see
 * embeddedIpv4) is also judged by that address. Anything that is not an IP address is refused (fail
 * closed); without a port, ported allow entries permit nothing and ported refusals refuse.
 */
export function checkAddress(ip: string, policy: AddressPolicy, port?: number): AddressVerdict {
  const address = ip.split('%')[0] ?? '';
  const version = isIP(address);
  if (version === 0) return { allowed: false, reason: `${ip} is not an IP address` };
  const views: Array<{ address: string; family: 'ipv4' | 'ipv6' }> = [{ address, family: version === 4 ? 'ipv4' : 'ipv6' }];
  const embedded = version === 6 ? embeddedIpv4(address) : [];
  views.push(...embedded.map((view) => ({ address: view, family: 'ipv4' as const })));
  const shown = embedded.length === 0 ? ip : `${ip} (${embedded.join(' or ')})`;
  const matches = (blocks: BlockList): boolean => views.some((view) => blocks.check(view.address, view.family));

  const refuses = (cidr: Cidr): boolean => (port === undefined || coversPort(cidr, port)) && matches(toBlockList([cidr]));
  const broker = policy.broker?.find(refuses);
  if (broker !== undefined)
    return {
      allowed: false,
      reason: `${shown} port ${port ?? '?'} is the relay's own broker (${broker.text}), refused whatever TARGET_ALLOW says`,
    };
  const allow = policy.allow.filter((cidr) => coversPort(cidr, port));
  if (allow.length > 0 && matches(toBlockList(allow))) {
    const closed = alwaysDeniedUnopened(views, allow);
    if (closed === undefined) return { allowed: true };
    return {
      allowed: false,
      reason: `${shown} is ${closed.label}, refused even though TARGET_ALLOW covers it: only an entry naming ${closed.range} or a range inside it opens it`,
    };
  }
  const denied = policy.deny.find(refuses);
  if (denied !== undefined) return { allowed: false, reason: `${shown} is in the deny list (${denied.text})` };
  const rules = policy.strict ? [...ALWAYS_DENIED, ...STRICT_DENIED] : ALWAYS_DENIED;
  const hit = rules.find((candidate) => matches(candidate.blocks));
  if (hit !== undefined) {
    const mode = STRICT_DENIED.includes(hit) ? ', refused in strict mode' : '';
    return { allowed: false, reason: `${shown} is ${hit.label}${mode}` };
  }
  return { allowed: true };
}

/**
 * The first always-denied range an address (any of its views) is in that no allow entry opens, or
 * undefined. An entry opens a range only when it lies inside it (same family, prefix at least the
 * range's, network inside the range) and holds the view: a wide entry that merely overlaps a metadata
 * or link-local range was written for something else, and must not hand out cloud credentials.
 */
function alwaysDeniedUnopened(
  views: ReadonlyArray<{ address: string; family: 'ipv4' | 'ipv6' }>,
  allow: readonly Cidr[],
): { label: string; range: string } | undefined {
  for (const view of views) {
    for (const denied of ALWAYS_DENIED) {
      for (const range of denied.cidrs) {
        if (range.family !== view.family || !toBlockList([range]).check(view.address, view.family)) continue;
        const inside = allow.filter(
          (entry) =>
            entry.family === range.family && entry.prefix >= range.prefix && toBlockList([range]).check(entry.address, entry.family),
        );
        if (!inside.some((entry) => toBlockList([entry]).check(view.address, view.family)))
          return { label: denied.label, range: range.text };
      }
    }
  }
  return undefined;
}

// Built per call on purpose: checks happen once per new connection, not per request, and no cache can go stale.
function toBlockList(cidrs: readonly Cidr[]): BlockList {
  const blocks = new BlockList();
  for (const cidr of cidrs) blocks.addSubnet(cidr.address, cidr.prefix, cidr.family);
  return blocks;
}

/**
 * The IPv4 addresses an IPv6 address may carry, each of which reaches that IPv4 host through a
 * translator or tunnel: IPv4-mapped (::ffff:0:0/96), IPv4-compatible (::/96 but :: and ::1), NAT64
 * (64:ff9b::/96), 6to4 (2002::/16, RFC 3056: the IPv4 address follows the prefix) and local-use
 * NAT64 (64:ff9b:1::/48, RFC 8215), whose prefix length, and so the IPv4 address's position, is the
 * operator's choice: every RFC 6052 position is judged.
 */
function embeddedIpv4(address: string): string[] {
  const words = ipv6Words(address);
  const bytes = words.flatMap((word) => [word >> 8, word & 0xff]);
  const at = (...offsets: number[]): string => offsets.map((offset) => bytes[offset] ?? 0).join('.');
  const last32 = at(12, 13, 14, 15);
  const zeroUpTo = (count: number): boolean => words.slice(0, count).every((word) => word === 0);
  if (zeroUpTo(5) && words[5] === 0xffff) return [last32];
  if (zeroUpTo(6) && (words[6] !== 0 || (words[7] ?? 0) > 1)) return [last32];
  if (words[0] === 0x64 && words[1] === 0xff9b && words.slice(2, 6).every((word) => word === 0)) return [last32];
  if (words[0] === 0x2002) return [at(2, 3, 4, 5)];
  if (words[0] === 0x64 && words[1] === 0xff9b && words[2] === 1 && bytes[8] === 0) return localUseNat64(bytes);
  return [];
}

// RFC 6052 §2.2: where the IPv4 address sits for each NAT64 prefix length, by byte (bits 64–71 stay zero).
const NAT64_LAYOUTS: ReadonlyArray<readonly number[]> = [
  [6, 7, 9, 10],
  [7, 9, 10, 11],
  [9, 10, 11, 12],
  [10, 11, 12, 13],
  [11, 12, 13, 14],
  [12, 13, 14, 15],
];

/**
 * The IPv4 addresses a local-use NAT64 address may carry: every layout whose suffix (the bytes after
 * the IPv4 address) is zero, as RFC 6052 requires. A 0.0.0.0/8 reading is the zero padding of a
 * longer layout, not a host a translator would dial, so it is left out.
 */
function localUseNat64(bytes: readonly number[]): string[] {
  const readings = NAT64_LAYOUTS.filter((layout) => bytes.slice((layout[3] ?? 15) + 1).every((byte) => byte === 0))
    .map((layout) => layout.map((offset) => bytes[offset] ?? 0))
    .filter((octets) => octets[0] !== 0)
    .map((octets) => octets.join('.'));
  return [...new Set(readings)];
}

/** Eight 16-bit words of a valid IPv6 address (no zone id); handles `::` and a trailing dotted quad. */
function ipv6Words(address: string): number[] {
  let text = address;
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (tail.includes('.')) {
    const [a = 0, b = 0, c = 0, d = 0] = tail.split('.').map(Number);
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', rest] = text.split('::');
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((word) => Number.parseInt(word, 16)));
  const headWords = parse(head);
  const restWords = rest === undefined ? [] : parse(rest);
  const zeros = new Array<number>(8 - headWords.length - restWords.length).fill(0);
  return [...headWords, ...zeros, ...restWords];
}
