import { describe, expect, it } from 'vitest';
import { DeclarationGate } from '../../../src/producer/declaration-gate.js';

const timeout = (): Error => Object.assign(new Error('timed out'), { code: 'CR_ERR_PUBLISH_TIMEOUT' });
const after = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('DeclarationGate: the first topology declaration is not a publish\'s time', () => {
  it('a declaration under way longer than PUBLISH_TIMEOUT holds the publish back, then lets it go', async () => {
    const gate = new DeclarationGate();
    void gate.track(after(250));
    const started = Date.now();
    await gate.wait(100, timeout);
    expect(Date.now() - started).toBeGreaterThanOrEqual(240);
    expect(gate.isDeclared).toBe(true);
  });

  it('a declaration that starts while the publish waits counts too', async () => {
    const gate = new DeclarationGate();
    setTimeout(() => void gate.track(after(250)), 50);
    await expect(gate.wait(100, timeout)).resolves.toBeUndefined();
  });

  it('no declaration at all (no broker): rejects after PUBLISH_TIMEOUT', async () => {
    const gate = new DeclarationGate();
    await expect(gate.wait(80, timeout)).rejects.toMatchObject({ code: 'CR_ERR_PUBLISH_TIMEOUT' });
  });

  it('a declaration that fails: the publish waits for the next one within PUBLISH_TIMEOUT, else rejects', async () => {
    const gate = new DeclarationGate();
    void gate.track(Promise.reject(new Error('406'))).catch(() => {});
    await expect(gate.wait(80, timeout)).rejects.toMatchObject({ code: 'CR_ERR_PUBLISH_TIMEOUT' });
    expect(gate.isDeclared).toBe(false);
  });

  it('tells how much of a wait was declaring: finished declarations and the one under way', async () => {
    const gate = new DeclarationGate();
    const before = Date.now();
    await gate.track(after(100));
    await after(100);
    const since = Date.now();
    expect(gate.declaredMsSince(before)).toBeGreaterThanOrEqual(90);
    expect(gate.declaredMsSince(since)).toBe(0);
    void gate.track(after(150));
    await after(100);
    expect(gate.declaredMsSince(since)).toBeGreaterThanOrEqual(90);
    expect(gate.declaredMsSince(before)).toBeGreaterThanOrEqual(180);
  });
});
