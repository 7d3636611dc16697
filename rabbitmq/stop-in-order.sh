#!/usr/bin/env bash
# The broker image's entrypoint: `stop-in-order.sh <command…>` runs the command (the official
# entrypoint and rabbitmq-server) and, when the container is asked to stop (SIGTERM from
# `docker stop`, compose or Kubernetes; SIGINT), runs before-stop.sh first, then passes the signal on.
# So an orderly stop of a plugin-mode node loses no delayed retry (docs/plugin-mode.md) without any
# hook of the orchestrator's. It exits with the command's status. BEFORE_STOP overrides the script.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
child=""
stopping=0

# shellcheck disable=SC2317 # run by the trap
on_stop() {
  trap - TERM INT
  stopping=1
  # Best effort: a failed step must not keep the broker from stopping.
  "${BEFORE_STOP:-$here/before-stop.sh}" >&2 || echo "stop-in-order: before-stop failed; stopping the broker anyway" >&2
  if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null || true; fi
}
# Trapped before the command starts: a stop that comes as it starts must not kill this script alone.
trap on_stop TERM INT
"$@" &
child=$!
# A stop that came before the command's pid was known: pass it on now.
if [ "$stopping" = 1 ]; then kill -TERM "$child" 2>/dev/null || true; fi

status=0
# `wait` returns early when a trapped signal arrives; wait again until the command has exited.
while kill -0 "$child" 2>/dev/null; do
  wait "$child"
  status=$?
done
exit "$status"
