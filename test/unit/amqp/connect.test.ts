import { describe, expect, it } from 'vitest';
import { connectFirst } from '../../../src/amqp/connect.js';
import { isRelayError } from '../../../src/errors.js';

describe('connectFirst', () => {
  it('rejects with CR_ERR_BROKER_UNREACHABLE naming the last broker tried, never its password', async () => {
    // Port 1 on loopback refuses at once: no broker is involved.
    const error = await connectFirst(['amqp://guest:pw-one@127.0.0.1:1', 'amqp://guest:pw-two@127.0.0.1:1/vhost']).catch((e: unknown) => e);
    expect(isRelayError(error, 'CR_ERR_BROKER_UNREACHABLE')).toBe(true);
    expect((error as Error).message).toMatch(/^cannot connect to the broker at amqp:\/\/\*\*\*@127\.0\.0\.1:1\/vhost: /);
    expect((error as Error).message).not.toMatch(/pw-one|pw-two/);
  });

  it('rejects with CR_ERR_BROKER_UNREACHABLE when there is no broker to try', async () => {
    await expect(connectFirst([])).rejects.toMatchObject({ code: 'CR_ERR_BROKER_UNREACHABLE' });
  });
});
