import { isIP } from 'node:net';
import { RelayError } from '../errors.js';

/** One parsed CIDR block. A bare address is read as a single-host block (/32 or /128). */
export interface Cidr {
  /** Network address as written (IPv4 dotted quad or IPv6 text). */
  readonly address: string;
  /** Prefix length: 0–32 for IPv4, 0–128 for IPv6. */
  readonly prefix: number;
  readonly family: 'ipv4' | 'ipv6';
  /** The TCP ports the entry covers (`10.0.0.0/8:443,8443`); absent: every port. */
  readonly ports?: readonly number[];
  /** Canonical `address/prefix` (with `:ports` when it names some), used in refusal reasons. */
  readonly text: string;
}

const EXPECTED = '(expected e.g. 10.0.0.0/8, 10.0.0.0/8:443,8443, [::1]:8080 or fd00::/8)';

/** What is wrong with one CIDR entry, or undefined when it is one. */
export function cidrProblem(entry: string): string | undefined {
  return readCidr(entry) === undefined ? `"${entry}" is not a CIDR block ${EXPECTED}` : undefined;
}

/** What is wrong with the first bad entry of a comma-separated list, or undefined when there is none. */
export function cidrListProblem(value: string): string | undefined {
  const { problem } = readList(value);
  return problem;
}

/**
 * Parses one CIDR (`10.0.0.0/8`, `fd00::/8`) or bare address, optionally with ports
 * (`10.0.0.0/8:443`, `[::1]:8080`). Throws `CR_ERR_CONFIG` naming `field` and the bad entry.
 */
export function parseCidr(entry: string, field: string): Cidr {
  const cidr = readCidr(entry);
  if (cidr === undefined) throw new RelayError('CR_ERR_CONFIG', `${field}: ${cidrProblem(entry)}`, { field });
  return cidr;
}

/** Does `cidr` cover `port`? An entry without ports covers every port. */
export const coversPort = (cidr: Cidr, port: number | undefined): boolean =>
  cidr.ports === undefined || (port !== undefined && cidr.ports.includes(port));

// An IPv6 address holds colons, so ports follow either a prefix (`fd00::/8:443`) or brackets (`[::1]:443`);
// a bare IPv4 address may take them directly (`10.0.0.1:443`).
const PORTED = [/^\[([^\]]+)\](?:\/(\d+))?:([\d,]+)$/, /^([^/]+)\/(\d+):([\d,]+)$/, /^([\d.]+)(?:\/(\d+))?:([\d,]+)$/];

function readCidr(entry: string): Cidr | undefined {
  const text = entry.trim();
  for (const pattern of PORTED) {
    const match = pattern.exec(text);
    if (match === null) continue;
    const [, address = '', prefixText, portsText = ''] = match;
    const ports = portsText.split(',').map((port) => (/^\d{1,5}$/.test(port) ? Number(port) : Number.NaN));
    if (!ports.every((port) => port >= 1 && port <= 65_535)) return undefined;
    const block = readBlock(address, prefixText);
    return block && { ...block, ports, text: `${block.text}:${ports.join(',')}` };
  }
  const [address = '', prefixText, extra] = text.split('/');
  return extra === undefined ? readBlock(address, prefixText) : undefined;
}

function readBlock(address: string, prefixText: string | undefined): Cidr | undefined {
  // Zone ids (fe80::1%eth0) name an interface, not a network, yet isIP accepts them: refuse rather than guess.
  const version = address.includes('%') ? 0 : isIP(address);
  const max = version === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? max : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : Number.NaN;
  if (version === 0 || !(prefix >= 0 && prefix <= max)) return undefined;
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6', text: `${address}/${prefix}` };
}

/**
 * Parses a comma-separated list (as in an environment variable) or an array of CIDRs. Empty entries
 * are skipped, so `""` is the empty list. A bare number continues the port list of the entry before
 * it (`10.0.0.0/8:443,8443` is one entry). Throws `CR_ERR_CONFIG` naming `field` and the bad entry.
 */
export function parseCidrList(value: string | readonly string[] | undefined, field: string): Cidr[] {
  const { cidrs, problem } = readList(value);
  if (problem !== undefined) throw new RelayError('CR_ERR_CONFIG', `${field}: ${problem}`, { field });
  return cidrs;
}

function readList(value: string | readonly string[] | undefined): { cidrs: Cidr[]; problem?: string } {
  const parts = (typeof value === 'string' ? value.split(',') : (value ?? [])).map((part) => part.trim()).filter((part) => part !== '');
  // Regroup `10.0.0.0/8:443`, `8443` into one entry before parsing.
  const entries: string[] = [];
  for (const part of parts) {
    const last = entries.length - 1;
    const previous = entries[last];
    if (/^\d+$/.test(part) && previous !== undefined && readCidr(previous)?.ports !== undefined) entries[last] = `${previous},${part}`;
    else entries.push(part);
  }
  const cidrs: Cidr[] = [];
  for (const entry of entries) {
    const cidr = readCidr(entry);
    if (cidr === undefined) return { cidrs, problem: cidrProblem(entry) };
    cidrs.push(cidr);
  }
  return { cidrs };
}
