import { RelayError } from '../errors.js';

export type DelayModeSetting = 'auto' | 'plugin' | 'queues';
export type DelayMode = 'plugin' | 'queues';

/** `auto` takes the plugin when the broker has it; an explicit `plugin` without it is an error. */
export function resolveDelayMode(requested: DelayModeSetting, hasDelayedPlugin: boolean): DelayMode {
  if (requested === 'queues') return 'queues';
  if (hasDelayedPlugin) return 'plugin';
  if (requested === 'auto') return 'queues';
  throw new RelayError(
    'CR_ERR_DELAY_MODE',
    'DELAY_MODE=plugin but the broker has no x-delayed-message exchange type: enable rabbitmq_delayed_message_exchange, or set DELAY_MODE=queues',
  );
}
