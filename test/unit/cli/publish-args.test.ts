import { describe, expect, it } from 'vitest';
import { parsePublishArgs } from '../../../src/cli/publish-command.js';

const URL_ = 'https://example.com/hook';

describe('parsePublishArgs: --order-key', () => {
  it('sets the callback orderKey, as given', () => {
    expect(parsePublishArgs(['--url', URL_, '--order-key', 'tenant 7']).callback).toEqual({ url: URL_, body: null, orderKey: 'tenant 7' });
    expect(parsePublishArgs(['--url', URL_, '--order-key=k', '--delay', '0s'])).toEqual({
      callback: { url: URL_, body: null, orderKey: 'k' },
      options: { delay: 0 },
    });
  });

  it('leaves it out without the flag', () => {
    expect(parsePublishArgs(['--url', URL_]).callback).not.toHaveProperty('orderKey');
  });

  it('refuses it with a delay before connecting, naming --delay', () => {
    expect(() => parsePublishArgs(['--url', URL_, '--order-key', 'k', '--delay', '30s'])).toThrow(
      expect.objectContaining({ code: 'CR_ERR_INVALID_CALLBACK', field: '--delay' }),
    );
  });

  it('needs a value', () => {
    expect(() => parsePublishArgs(['--url', URL_, '--order-key'])).toThrow();
  });
});
