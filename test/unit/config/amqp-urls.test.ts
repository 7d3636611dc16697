import { describe, expect, it } from 'vitest';
import { amqpUrls } from '../../../src/config/amqp-urls.js';
import { loadConfig } from '../../../src/config/load-config.js';

describe('AMQP_URL with several brokers', () => {
  it('splits a comma-separated list and ignores blanks', () => {
    expect(amqpUrls('amqp://a, amqp://b:5673 ,,')).toEqual(['amqp://a', 'amqp://b:5673']);
  });

  it('validates each URL and masks every password in the error', () => {
    expect(loadConfig({ AMQP_URL: 'amqp://u:p@a,amqp://u:p@b' }).amqpUrl).toBe('amqp://u:p@a,amqp://u:p@b');
    try {
      loadConfig({ AMQP_URL: 'amqp://u:s3cret@a,http://u:s3cret@b' });
      expect.unreachable();
    } catch (error) {
      expect((error as Error).message).toContain('AMQP_URL (amqpUrl)');
      expect((error as Error).message).not.toContain('s3cret');
    }
  });
});
