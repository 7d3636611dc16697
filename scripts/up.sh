#!/usr/bin/env bash
# Brings up everything on this machine: dependencies, a RabbitMQ broker with the management UI, the
# topology, an example receiver on :3000 and one worker in the foreground (Ctrl-C drains and stops it).
#   - AMQP_URL set, or a broker already answering on localhost:5672: that broker is used.
#   - else a Docker engine answers: `docker compose up` starts the project's broker image.
#   - else: rabbitmq-server from Debian's packages (installed if absent) runs as a project-local node
#     under .relay/rabbitmq (stop it with scripts/down.sh).
# On a broker it started itself, every part gets a broker account of its own with the least permissions
# of its role (scripts/broker-accounts.sh, docs/security.md); on a broker of yours, AMQP_URL's user.
set -euo pipefail
cd "$(dirname "$0")/.."
STATE=.relay
mkdir -p "$STATE"
say() { printf '\033[1m[up]\033[0m %s\n' "$*"; }

node -e 'const [a,b]=process.versions.node.split(".").map(Number); if (a<20||(a===20&&b<18)) { console.error("Node >= 20.18 is required, found "+process.versions.node); process.exit(1) }'
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then say "installing dependencies"; npm ci --no-audit --no-fund; fi
[ -f dist/consumer/main.js ] && [ -z "$(find src -newer dist/consumer/main.js -name '*.ts' | head -1)" ] || { say "building"; npm run build --silent; }

amqp_answers() { node -e 'require("net").connect(5672,"127.0.0.1").on("connect",()=>process.exit(0)).on("error",()=>process.exit(1))'; }

MGMT=http://localhost:15672
if [ -n "${AMQP_URL:-}" ]; then
  say "using the broker at AMQP_URL"
  MGMT="(the management UI of your broker)"
elif amqp_answers; then
  say "a broker already answers on localhost:5672: using it"
  export AMQP_URL=amqp://guest:guest@localhost:5672
elif docker info >/dev/null 2>&1; then
  say "starting RabbitMQ with docker compose"
  docker compose up -d --build --wait rabbitmq
  export AMQP_URL=amqp://guest:guest@localhost:5672
  own_broker=yes
else
  if ! command -v rabbitmq-server >/dev/null 2>&1; then
    say "installing rabbitmq-server from Debian's packages"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq rabbitmq-server >/dev/null
  fi
  bash scripts/local-broker.sh start "$STATE/rabbitmq"
  export AMQP_URL=amqp://guest:guest@localhost:5672
  own_broker=yes
fi
if [ "${own_broker:-}" = yes ]; then
  say "one broker account per role (passwords: $STATE/accounts.env; docs/security.md#broker-accounts-and-permissions)"
  eval "$(bash scripts/broker-accounts.sh "$STATE" localhost:5672 http://localhost:15672)"
else
  PRODUCER_URL=$AMQP_URL CONSOLE_URL=$AMQP_URL WORKER_URL=$AMQP_URL ADMIN_URL=$AMQP_URL
fi

if ! node -e 'require("net").connect(3000,"127.0.0.1").on("connect",()=>process.exit(0)).on("error",()=>process.exit(1))'; then
  say "starting the example receiver on http://localhost:3000 (log: $STATE/receiver.log)"
  nohup node examples/receiver.mjs >"$STATE/receiver.log" 2>&1 &
  echo $! >"$STATE/receiver.pid"
fi

# The stream P.history keeps every outcome: `callback-relay history <id>` and the console read it.
export HISTORY="${HISTORY:-on}"
# The topology step, with the admin account: publishers declare nothing.
AMQP_URL=$ADMIN_URL node dist/topology/main.js
# A random console token, made once and kept in the state directory (the console refuses weak ones).
if [ ! -s "$STATE/console-token" ]; then
  (umask 077 && node -p 'require("node:crypto").randomBytes(24).toString("base64url")' >"$STATE/console-token")
fi
cat <<MSG

  callback-relay is up.
  Management UI:  $MGMT   (guest / guest) → Queues → ${TOPOLOGY_PREFIX:-callback-relay}.dead → Get messages
  Publish a callback that is delivered (with the producer's broker account):
    AMQP_URL='$PRODUCER_URL' npx callback-relay publish --url http://localhost:3000/ok --data '{"hello":"world"}'
  Publish one the receiver rejects (404), which lands in the dead-letter queue:
    AMQP_URL='$PRODUCER_URL' npx callback-relay publish --url http://localhost:3000/gone --data '{"will":"fail"}'
  Operator console (in another terminal; it listens on loopback, with the console's broker account),
  then open http://localhost:8081 and log in with the token kept in $STATE/console-token:
    AMQP_URL='$CONSOLE_URL' CONSOLE_TOKENS=me:\$(cat $STATE/console-token) npx callback-relay console
  Receiver log: $STATE/receiver.log    Stop the broker and receiver: bash scripts/down.sh

MSG
# TARGET_POLICY=strict (the default) refuses loopback; the example receiver listens there, on port
# 3000. Only that port is allowed: the broker's management API listens on loopback too.
export TARGET_ALLOW="${TARGET_ALLOW:-127.0.0.0/8:3000,[::1]:3000}"
say "starting a worker (Ctrl-C drains and stops it)"
AMQP_URL=$WORKER_URL exec node dist/consumer/main.js
