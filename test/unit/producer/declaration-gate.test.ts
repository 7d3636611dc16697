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
});
