/**
 * The Standard Webhooks reference vector: TestWebhookSign in libraries/go/webhook_test.go and
 * "sign function works" in libraries/javascript/src/webhook.test.ts of standard-webhooks/standard-webhooks.
 */
export const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  payload: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};
