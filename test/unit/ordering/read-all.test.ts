import { describe, expect, it } from 'vitest';
import type { LogEntry } from '../../../src/ordering/log-entry.js';
import type { OrderLog } from '../../../src/ordering/order-log.js';
import { readAll } from '../../../src/ordering/read-all.js';

const entry = (offset: number): LogEntry => ({ offset, headers: {}, properties: {}, body: Buffer.alloc(0) });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A log whose follow delivers `script`'s entries: each after its delay (ms) from the previous one. */
function scriptedLog(delays: number[], options: { startMs?: number; fail?: unknown } = {}) {
  const state = { stopped: 0, started: 0 };
  const log: Pick<OrderLog, 'follow'> = {
    async follow(_from, onEntry, onEnd) {
      if (options.fail) throw options.fail;
      await sleep(options.startMs ?? 0);
      state.started += 1;
      let live = true;
      void (async () => {
        for (const [offset, delay] of delays.entries()) {
          await sleep(delay);
          if (!live) return;
          if (delay < 0) return onEnd?.(new Error('the channel closed'));
          onEntry(entry(offset));
        }
      })();
      return async () => {
        live = false;
        state.stopped += 1;
      };
    },
  };
  return { log, state };
}

describe('readAll', () => {
  it('reads every entry until the log falls quiet, then stops its follow', async () => {
    const { log, state } = scriptedLog([0, 5, 5, 10, 5, 400, 5]);
    const seen: number[] = [];
    await expect(readAll(log, (e) => seen.push(e.offset), { quietMs: 100, timeoutMs: 2_000 })).resolves.toBe(5);
    expect(seen).toEqual([0, 1, 2, 3, 4]);
    expect(state.stopped).toBe(1);
    await sleep(450);
    // What arrived after the end is not passed on.
    expect(seen).toHaveLength(5);
  });

  it('an empty log ends after the quiet time, not the timeout', async () => {
    const { log, state } = scriptedLog([]);
    const started = Date.now();
    await expect(readAll(log, () => {}, { quietMs: 50, timeoutMs: 5_000 })).resolves.toBe(0);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(state.stopped).toBe(1);
  });

  it('CR_ERR_LOG_READ_TIMEOUT when the log never falls quiet; the follow is stopped', async () => {
    const { log, state } = scriptedLog(Array.from({ length: 100 }, () => 10));
    await expect(readAll(log, () => {}, { quietMs: 200, timeoutMs: 400 })).rejects.toMatchObject({ code: 'CR_ERR_LOG_READ_TIMEOUT' });
    expect(state.stopped).toBe(1);
  });

  it('CR_ERR_LOG_READ_TIMEOUT when the follow does not start in time; it is stopped once it does', async () => {
    const { log, state } = scriptedLog([0], { startMs: 200 });
    await expect(readAll(log, () => {}, { quietMs: 20, timeoutMs: 50 })).rejects.toMatchObject({ code: 'CR_ERR_LOG_READ_TIMEOUT' });
    await sleep(250);
    expect([state.started, state.stopped]).toEqual([1, 1]);
  });

  it('rejects with why the follow ended, failed to start, or what onEntry threw', async () => {
    const ended = scriptedLog([0, 5, -1]);
    await expect(readAll(ended.log, () => {}, { quietMs: 100 })).rejects.toThrow('the channel closed');
    expect(ended.state.stopped).toBe(1);
    const missing = Object.assign(new Error('no stream'), { code: 'CR_ERR_LOG_MISSING' });
    await expect(readAll(scriptedLog([], { fail: missing }).log, () => {})).rejects.toBe(missing);
    const thrower = scriptedLog([0, 5]);
    await expect(
      readAll(
        thrower.log,
        () => {
          throw new Error('bad entry');
        },
        { quietMs: 100 },
      ),
    ).rejects.toThrow('bad entry');
    expect(thrower.state.stopped).toBe(1);
  });
});
