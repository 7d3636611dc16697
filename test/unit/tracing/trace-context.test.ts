import { describe, expect, it } from 'vitest';
import { isRelayError, type RelayError } from '../../../src/errors.js';
import { parsePublishArgs } from '../../../src/cli/publish-command.js';
import {
  formatTraceparent,
  parseTraceparent,
  readTraceContext,
  traceHeaders,
  traceOption,
  withoutTraceHeaders,
} from '../../../src/tracing/trace-context.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN_ID = '00f067aa0ba902b7';
const TP = `00-${TRACE_ID}-${SPAN_ID}-01`;

function optionError(options: { traceparent?: string; tracestate?: string }): RelayError {
  try {
    traceOption(options);
  } catch (error) {
    if (isRelayError(error, 'CR_ERR_INVALID_CALLBACK')) return error;
    throw error;
  }
  throw new Error(`traceOption accepted ${JSON.stringify(options)}`);
}

describe('parseTraceparent', () => {
  it('parses a version-00 traceparent and formats it back', () => {
    const parsed = parseTraceparent(TP);
    expect(parsed).toEqual({ traceId: TRACE_ID, spanId: SPAN_ID, flags: 1 });
    expect(formatTraceparent(parsed!)).toBe(TP);
    expect(formatTraceparent({ traceId: TRACE_ID, spanId: SPAN_ID, flags: 0 })).toBe(`00-${TRACE_ID}-${SPAN_ID}-00`);
  });

  it('refuses what the W3C spec says to discard', () => {
    for (const bad of [
      '',
      `ff-${TRACE_ID}-${SPAN_ID}-01`,
      `00-${'0'.repeat(32)}-${SPAN_ID}-01`,
      `00-${TRACE_ID}-${'0'.repeat(16)}-01`,
      `00-${TRACE_ID.toUpperCase()}-${SPAN_ID}-01`,
      `00-${TRACE_ID}-${SPAN_ID}-01-extra`,
      `00-${TRACE_ID}-${SPAN_ID}`,
    ]) {
      expect(parseTraceparent(bad), bad).toBeUndefined();
    }
  });

  it('accepts a later version with extra fields, ignoring them', () => {
    expect(parseTraceparent(`01-${TRACE_ID}-${SPAN_ID}-01-what-comes-next`)).toEqual({ traceId: TRACE_ID, spanId: SPAN_ID, flags: 1 });
  });
});

describe('traceOption (publish options)', () => {
  it('is undefined without a traceparent, and keeps a valid context', () => {
    expect(traceOption({})).toBeUndefined();
    expect(traceOption({ traceparent: TP })).toEqual({ traceparent: TP });
    expect(traceOption({ traceparent: TP, tracestate: 'vendor=abc,other=1' })).toEqual({
      traceparent: TP,
      tracestate: 'vendor=abc,other=1',
    });
  });

  it('names the option that is malformed', () => {
    expect(optionError({ traceparent: 'nope' }).field).toBe('traceparent');
    expect(optionError({ tracestate: 'a=b' }).field).toBe('tracestate');
    expect(optionError({ traceparent: TP, tracestate: 'a=b\r\nx: y' }).field).toBe('tracestate');
    expect(optionError({ traceparent: TP, tracestate: 'a='.padEnd(513, 'x') }).field).toBe('tracestate');
  });

  it('is what the CLI flags give, checked the same way', () => {
    const { options } = parsePublishArgs([
      '--url',
      'https://example.com/hook',
      '--traceparent',
      TP,
      '--tracestate',
      'v=1',
      '--delay',
      '5s',
    ]);
    expect(options).toEqual({ delay: 5_000, traceparent: TP, tracestate: 'v=1' });
    expect(parsePublishArgs(['--url', 'https://example.com/hook']).options).toEqual({});
    expect(() => parsePublishArgs(['--url', 'https://example.com/hook', '--traceparent', 'x'])).toThrow(
      expect.objectContaining({ code: 'CR_ERR_INVALID_CALLBACK', field: 'traceparent' }),
    );
  });
});

describe('readTraceContext (AMQP headers)', () => {
  it('reads string or byte values, and ignores a malformed or absent traceparent', () => {
    expect(readTraceContext(undefined)).toBeUndefined();
    expect(readTraceContext({ 'x-other': 1 })).toBeUndefined();
    expect(readTraceContext({ traceparent: 'garbage', tracestate: 'a=b' })).toBeUndefined();
    expect(readTraceContext({ traceparent: TP })).toEqual({ traceparent: TP });
    expect(readTraceContext({ traceparent: Buffer.from(TP), tracestate: Buffer.from('a=b') })).toEqual({
      traceparent: TP,
      tracestate: 'a=b',
    });
    expect(readTraceContext({ traceparent: TP, tracestate: '' })).toEqual({ traceparent: TP });
  });
});

describe('request headers', () => {
  it('omits an absent tracestate', () => {
    expect(traceHeaders({ traceparent: TP })).toEqual({ traceparent: TP });
    expect(traceHeaders({ traceparent: TP, tracestate: 'a=b' })).toEqual({ traceparent: TP, tracestate: 'a=b' });
  });

  it('drops a callback’s own trace headers in any letter case, and keeps the rest untouched', () => {
    const own = { 'x-tenant': 'acme' };
    expect(withoutTraceHeaders(undefined)).toBeUndefined();
    expect(withoutTraceHeaders(own)).toBe(own);
    const mixed = { TraceParent: 'x', tracestate: 'y', 'x-tenant': 'acme' };
    expect(withoutTraceHeaders(mixed)).toEqual({ 'x-tenant': 'acme' });
    expect(mixed).toEqual({ TraceParent: 'x', tracestate: 'y', 'x-tenant': 'acme' });
  });
});
