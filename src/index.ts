export { createPublisher, type CallbackPublisher, type PublishOptions } from './producer/publisher.js';
export { createWorker, type Worker, type WorkerDeps } from './consumer/worker.js';
export { loadConfig, type RelayConfig } from './config/load-config.js';
export { configSchema } from './config/schema.js';
export { createLogger } from './logger.js';
export { ERROR_CODES, RelayError, isRelayError, type RelayErrorCode } from './errors.js';
export { validateCallback, type Callback, type CallbackMethod } from './message/callback.js';
export { HEADER } from './message/headers.js';
export { topologyNames, type TopologyNames } from './topology/topology-names.js';
export { declareOnce } from './topology/connect-topology.js';
export type { Decision, DeadReason, RetryPolicy } from './policy/decide.js';
export {
  verifyCallback,
  SignatureError,
  type SignatureErrorCode,
  type VerifyCallbackOptions,
  type CallbackHeaders,
} from './signing/verify-callback.js';
export { signCallback, type SignedHeaders } from './signing/sign-callback.js';
export { parseSigningSecrets, loadSigningSecrets, type SigningKey } from './formats/signing-secrets.js';
