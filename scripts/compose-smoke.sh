#!/usr/bin/env bash
# End-to-end check of the compose stack, for a machine with a Docker engine (none runs where this
# project is developed, so CI cannot run it):
#   1. `docker compose up --build --wait`: the broker image with the delayed-message plugin, a worker,
#      the example receiver;
#   2. the worker chose plugin mode (its "delay mode: plugin" log line);
#   3. one callback is delivered (the receiver logs the 200) and one is dead-lettered (a 404 parks it
#      in callback-relay.dead);
#   4. `--scale worker=3`: three workers, each in plugin mode, and a callback is still delivered;
#   5. everything is torn down, volumes included, whatever happened.
#
# It runs under its own compose project name, so it leaves a developer's stack and data alone, but
# it needs the stack's loopback ports (5672, 15672, 3000) free.
#   scripts/compose-smoke.sh
set -euo pipefail
cd "$(dirname "$0")/.."

project="callback-relay-smoke-$$"
dc() { docker compose -p "$project" "$@"; }
say() { printf '\033[1m[smoke]\033[0m %s\n' "$*"; }
fail() {
  printf '\033[1m[smoke] FAILED:\033[0m %s\n' "$*" >&2
  dc logs --no-color --tail 40 >&2 || true
  exit 1
}
teardown() {
  say "tearing down"
  dc down -v --remove-orphans >/dev/null 2>&1 || true
}
trap teardown EXIT

# Retries a check every second for up to $1 seconds.
wait_for() {
  local seconds=$1 what=$2
  shift 2
  for _ in $(seq 1 "$seconds"); do
    "$@" && return 0
    sleep 1
  done
  fail "$what (not within ${seconds}s)"
}

docker info >/dev/null 2>&1 || { echo "compose-smoke: no Docker engine answers (docker info failed)" >&2; exit 2; }

say "docker compose up --build --wait"
dc up --build --wait

worker_log() { dc logs --no-color worker; }
plugin_mode_lines() { worker_log | grep -cF 'delay mode: plugin' || true; }
workers_in_plugin_mode() { [ "$(plugin_mode_lines)" -ge "$1" ]; }
wait_for 60 "the worker logs 'delay mode: plugin'" workers_in_plugin_mode 1
if worker_log | grep -qF 'delay mode: queues'; then fail "a worker chose queues mode: the broker image lacks the plugin"; fi
say "worker chose plugin mode"

publish() { dc run --rm -T worker node dist/cli/main.js publish --url "http://receiver:3000/$1" --data "{\"smoke\":\"$1\"}" >/dev/null; }
delivered() { dc logs --no-color receiver | grep -qE "POST /$1 .* -> 200"; }
dead_count() {
  dc exec -T rabbitmq rabbitmqctl list_queues --quiet --no-table-headers name messages |
    awk '$1 == "callback-relay.dead" { print $2 }'
}
one_dead() { [ "$(dead_count)" = "1" ]; }

publish ok/smoke-1
publish gone/smoke-1
wait_for 60 "the callback to /ok/smoke-1 is delivered" delivered ok/smoke-1
say "delivered: /ok/smoke-1"
wait_for 60 "the callback to /gone/smoke-1 (404) is in callback-relay.dead" one_dead
say "dead-lettered: /gone/smoke-1"

say "docker compose up --wait --scale worker=3"
dc up --wait --scale worker=3
running_workers() { [ "$(dc ps --status running --quiet worker | wc -l)" -eq 3 ]; }
wait_for 30 "three worker containers run" running_workers
wait_for 60 "all three workers log 'delay mode: plugin'" workers_in_plugin_mode 3
publish ok/smoke-2
wait_for 60 "the callback to /ok/smoke-2 is delivered with three workers" delivered ok/smoke-2
say "three workers in plugin mode; /ok/smoke-2 delivered"

say "passed"
