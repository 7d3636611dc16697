import { isIP } from 'node:net';
import { RelayError } from '../errors.js';

/** One parsed CIDR block. A bare address is read as a single-host block (/32 or /128). */
export interface Cidr {
  /** Network address as written (IPv4 dotted quad or IPv6 text). */
  readonly address: string;
  /** Prefix length: 0–32 for IPv4, 0–128 for IPv6. */
  readonly prefix: number;
  readonly family: 'ipv4' | 'ipv6';
  /** Canonical `address/prefix`, used in refusal reasons. */
  readonly text: string;
}

/** What is wrong with one CIDR entry, or undefined when it is one. */
export function cidrProblem(entry: string): string | undefined {
  return readCidr(entry) === undefined ? `"${entry}" is not a CIDR block (expected e.g. 10.0.0.0/8 or fd00::/8)` : undefined;
}

/** What is wrong with the first bad entry of a comma-separated list, or undefined when there is none. */
export function cidrListProblem(value: string): string | undefined {
  for (const entry of listEntries(value)) {
    const problem = cidrProblem(entry);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/**
 * Parses one CIDR (`10.0.0.0/8`, `fd00::/8`) or bare address. Throws `CR_ERR_CONFIG` naming `field`
 * and the bad entry.
 */
export function parseCidr(entry: string, field: string): Cidr {
  const cidr = readCidr(entry);
  if (cidr === undefined) throw new RelayError('CR_ERR_CONFIG', `${field}: ${cidrProblem(entry)}`, { field });
  return cidr;
}

function readCidr(entry: string): Cidr | undefined {
  const text = entry.trim();
  const [address = '', prefixText, extra] = text.split('/');
  // Zone ids (fe80::1%eth0) name an interface, not a network, yet isIP accepts them: refuse rather than guess.
  const version = address.includes('%') ? 0 : isIP(address);
  const max = version === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? max : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : Number.NaN;
  if (version === 0 || extra !== undefined || !(prefix >= 0 && prefix <= max)) return undefined;
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6', text: `${address}/${prefix}` };
}

/**
 * Parses a comma-separated list (as in an environment variable) or an array of CIDRs. Empty entries
 * are skipped, so `""` is the empty list. Throws `CR_ERR_CONFIG` naming `field` and the bad entry.
 */
export function parseCidrList(value: string | readonly string[] | undefined, field: string): Cidr[] {
  return listEntries(value).map((entry) => parseCidr(entry, field));
}

const listEntries = (value: string | readonly string[] | undefined): string[] =>
  (typeof value === 'string' ? value.split(',') : (value ?? [])).filter((entry) => entry.trim() !== '');
