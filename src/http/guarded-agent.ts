import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { RelayError } from '../errors.js';
import { checkAddress, type AddressPolicy } from './address-policy.js';

export const FORBIDDEN_TARGET_CODE = 'CR_ERR_FORBIDDEN_TARGET';

/** A connection was refused by the address policy before any TCP connect was attempted. */
export class ForbiddenTargetError extends RelayError<typeof FORBIDDEN_TARGET_CODE> {
  /** The host name or IP literal of the URL. */
  readonly hostname: string;

  constructor(hostname: string, reasons: readonly string[]) {
    super(FORBIDDEN_TARGET_CODE, `forbidden target ${hostname}: ${reasons.join('; ')}`);
    this.name = 'ForbiddenTargetError';
    this.hostname = hostname;
  }
}

export interface GuardedAgentOptions {
  /** Connect timeout in ms (the caller's own deadline bounds the whole request). No default. */
  timeoutMs: number;
  /** Which resolved addresses may be dialled (see `checkAddress`). No default. */
  policy: AddressPolicy;
  /** Resolver with `dns.lookup`'s signature, injectable for tests. Default: `dns.lookup`. */
  lookup?: LookupFunction;
}

/**
 * A keep-alive undici Agent that refuses to connect to addresses the policy forbids. The check runs
 * on the address actually dialled (after DNS, per connection), so DNS rebinding cannot slip through.
 * Refused requests reject with an error for which `isForbiddenTargetError` is true.
 */
export function createGuardedAgent(options: GuardedAgentOptions): Agent {
  const { timeoutMs, policy } = options;
  // net.connect does not tell a lookup the port, and the policy judges address and port together
  // (TARGET_ALLOW entries may name ports), so each port has its own connector and guarded lookup.
  // Undici ignores `connectTimeout` when `connect` is a function, so the timeout goes to buildConnector.
  const connectors = new Map<number, buildConnector.connector>();
  const connectorFor = (port: number): buildConnector.connector => {
    let connector = connectors.get(port);
    if (connector === undefined) {
      connector = buildConnector({ timeout: timeoutMs, lookup: createGuardedLookup(policy, options.lookup, port) });
      connectors.set(port, connector);
    }
    return connector;
  };
  const connect: buildConnector.connector = (connectOptions, callback) => {
    const port = Number(connectOptions.port) || (connectOptions.protocol === 'https:' ? 443 : 80);
    // net.connect skips `lookup` for IP literals, so those are checked here. Undici strips IPv6 brackets.
    const host = connectOptions.hostname.replace(/^\[(.*)\]$/, '$1');
    if (isIP(host) !== 0) {
      const verdict = checkAddress(host, policy, port);
      if (!verdict.allowed) {
        // Asynchronous like a socket error: undici's connect loop does not expect a re-entrant callback.
        process.nextTick(callback, new ForbiddenTargetError(host, [verdict.reason]), null);
        return;
      }
    }
    connectorFor(port)(connectOptions, callback);
  };
  // No header or body timers of undici's own: each attempt's deadline (consumer/attempt-deadline.ts)
  // is its one whole-request timer, and it aborts the request; 0 turns undici's off.
  return new Agent({ connect, headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 4_000 });
}

/**
 * Wraps a resolver so it only ever yields addresses the policy allows. Forbidden addresses are dropped
 * (a host with one good and one forbidden address still works, only the good one is dialled); when none
 * is left the lookup fails with a `ForbiddenTargetError`, which net.connect reports as the socket error.
 * Supports both callback forms: `{ all: true }` (used by happy eyeballs, `autoSelectFamily`) and single.
 * `port` is the TCP port the connection will use (see `checkAddress`).
 */
export function createGuardedLookup(
  policy: AddressPolicy,
  resolve: LookupFunction = dnsLookup as LookupFunction,
  port?: number,
): LookupFunction {
  return (hostname, lookupOptions, callback) => {
    const fail = callback as (error: NodeJS.ErrnoException) => void;
    // Always ask for every address, so a forbidden first answer does not hide an allowed second one.
    resolve(hostname, { ...lookupOptions, all: true }, (error, result, family) => {
      if (error) return fail(error);
      const addresses: LookupAddress[] = Array.isArray(result) ? result : [{ address: result, family: family ?? isIP(result) }];
      const allowed: LookupAddress[] = [];
      const reasons: string[] = [];
      for (const entry of addresses) {
        const verdict = checkAddress(entry.address, policy, port);
        if (verdict.allowed) allowed.push(entry);
        else reasons.push(verdict.reason);
      }
      const first = allowed[0];
      if (first === undefined) {
        return fail(new ForbiddenTargetError(hostname, reasons.length > 0 ? reasons : ['no address resolved']));
      }
      if (lookupOptions?.all === true) return callback(null, allowed);
      return callback(null, first.address, first.family);
    });
  };
}

/** True when `error`, or any error in its `cause` chain (or an AggregateError's list), is a refused target. */
export function isForbiddenTargetError(error: unknown): boolean {
  return carriesCode(error, 0);
}

// The depth cap guards against cyclic `cause` chains.
function carriesCode(error: unknown, depth: number): boolean {
  if (typeof error !== 'object' || error === null || depth > 8) return false;
  const candidate = error as { code?: unknown; cause?: unknown; errors?: unknown };
  if (candidate.code === FORBIDDEN_TARGET_CODE) return true;
  if (Array.isArray(candidate.errors) && candidate.errors.some((inner) => carriesCode(inner, depth + 1))) return true;
  return carriesCode(candidate.cause, depth + 1);
}
