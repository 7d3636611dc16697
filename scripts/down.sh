#!/usr/bin/env bash
# Stops what scripts/up.sh started: the example receiver, and the project-local broker or the compose services.
set -uo pipefail
cd "$(dirname "$0")/.."
[ -f .relay/receiver.pid ] && kill "$(cat .relay/receiver.pid)" 2>/dev/null && rm -f .relay/receiver.pid && echo "receiver stopped"
[ -d .relay/rabbitmq ] && bash scripts/local-broker.sh stop .relay/rabbitmq && echo "local broker stopped"
docker info >/dev/null 2>&1 && docker compose down
exit 0
