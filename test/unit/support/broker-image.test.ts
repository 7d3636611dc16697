/** What the harness builds rabbitmq/ from, read from the environment (test/support/broker-image.ts). */
import { describe, expect, it } from 'vitest';
import { isRelayError } from '../../../src/errors.js';
import { brokerChoice, brokerImageSpec } from '../../support/broker-image.js';

const COMMIT = 'a9a60750ccb269ba609113440ac65f2f938a7900';

function thrownField(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    return isRelayError(error) && error.code === 'CR_ERR_CONFIG' ? error.field : 'not a CR_ERR_CONFIG';
  }
  return 'no throw';
}

describe('brokerImageSpec', () => {
  it('passes only the variables that are set, so the Dockerfile defaults apply to the rest', () => {
    expect(brokerImageSpec({}).buildArgs).toEqual({});
    expect(brokerImageSpec({}).label).toBe('Dockerfile defaults');
    expect(brokerImageSpec({ RABBITMQ_IMAGE: 'rabbitmq:4.3-management', DELAYED_PLUGIN: '' }).buildArgs).toEqual({
      RABBITMQ_IMAGE: 'rabbitmq:4.3-management',
    });
  });

  it('the 4.0 series with the plugin: four build args, one tag of its own', () => {
    const env = {
      RABBITMQ_IMAGE: 'rabbitmq:4.0-management',
      DELAYED_PLUGIN: 'on',
      DELAYED_PLUGIN_VERSION: '4.0.7',
      DELAYED_PLUGIN_COMMIT: COMMIT,
    };
    const spec = brokerImageSpec(env);
    expect(spec.buildArgs).toEqual(env);
    expect(spec.tag).toMatch(/^callback-relay-test-rabbitmq:[0-9a-f]{12}$/);
    expect(spec.tag).toBe(brokerImageSpec({ ...env }).tag);
    expect(spec.tag).not.toBe(brokerImageSpec({ RABBITMQ_IMAGE: 'rabbitmq:4.3-management' }).tag);
  });

  it('a malformed value is a CR_ERR_CONFIG naming the variable', () => {
    expect(thrownField(() => brokerImageSpec({ DELAYED_PLUGIN: 'yes' }))).toBe('DELAYED_PLUGIN');
    expect(thrownField(() => brokerImageSpec({ DELAYED_PLUGIN_VERSION: '4.0' }))).toBe('DELAYED_PLUGIN_VERSION');
    expect(thrownField(() => brokerImageSpec({ DELAYED_PLUGIN_COMMIT: 'a9a6075' }))).toBe('DELAYED_PLUGIN_COMMIT');
    expect(thrownField(() => brokerImageSpec({ RABBITMQ_IMAGE: 'rabbitmq 4.3' }))).toBe('RABBITMQ_IMAGE');
  });
});

describe('brokerChoice (TEST_BROKER)', () => {
  it('auto when unset; local or container when named; anything else is refused', () => {
    expect(brokerChoice({})).toBe('auto');
    expect(brokerChoice({ TEST_BROKER: 'local' })).toBe('local');
    expect(brokerChoice({ TEST_BROKER: 'container' })).toBe('container');
    expect(thrownField(() => brokerChoice({ TEST_BROKER: 'docker' }))).toBe('TEST_BROKER');
  });
});
