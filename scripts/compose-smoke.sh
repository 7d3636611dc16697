#!/usr/bin/env bash
# End-to-end check of the compose stack on a machine with a Docker engine (CI runs it on RabbitMQ 4.0
# with the plugin and on 4.3 without it: .ci/run):
#   1. `docker compose up --build --wait`: the broker image (built from RABBITMQ_IMAGE, DELAYED_PLUGIN,
#      DELAYED_PLUGIN_VERSION, DELAYED_PLUGIN_COMMIT, as compose reads them), a worker, the ingest, the
#      example receiver, the console;
#   2. the worker chose the delay mode the broker offers: plugin when the image has the delayed-message
#      plugin, queues otherwise (DELAY_MODE=auto);
#   3. one callback is delivered (the receiver logs the 200) and one is dead-lettered (a 404 parks it
#      in callback-relay.dead), and the console lists that dead letter (a bearer token, its own network);
#   4. `--scale worker=3`: three workers in that mode share a burst: each delivers part of it
#      (callback_relay_attempts_total of each), and every callback is delivered;
#   5. `docker compose stop worker` in the middle of a burst: the workers drain (DRAIN_TIMEOUT 15 s),
#      and once they are started again every callback of the burst has been delivered, none twice
#      (in-flight deliveries finish and are acked, the rest return unstarted: docs/operations.md);
#   6. the broker container recreated on its volume, with callbacks waiting in the lanes and in the
#      delay path and no worker running: after the recreation and a worker start, all are delivered;
#   7. everything is torn down, volumes included, whatever happened.
#
# The burst of step 5 is SMOKE_BURST callbacks (default 2,000).
# It runs under its own compose project name (SMOKE_PROJECT, default callback-relay-smoke), so it
# leaves a developer's stack and data alone. The host ports are Docker's choice (0) unless
# AMQP_HOST_PORT, MANAGEMENT_HOST_PORT, INGEST_HOST_PORT, CONSOLE_HOST_PORT or RECEIVER_HOST_PORT say otherwise, so it
# runs beside a broker that holds 5672 and 15672.
#   scripts/compose-smoke.sh
#   RABBITMQ_IMAGE=rabbitmq:4.0-management DELAYED_PLUGIN=on DELAYED_PLUGIN_VERSION=4.0.7 \
#     DELAYED_PLUGIN_COMMIT=a9a60750ccb269ba609113440ac65f2f938a7900 scripts/compose-smoke.sh
set -euo pipefail
cd "$(dirname "$0")/.."

project="${SMOKE_PROJECT:-callback-relay-smoke}"
export AMQP_HOST_PORT="${AMQP_HOST_PORT:-0}" MANAGEMENT_HOST_PORT="${MANAGEMENT_HOST_PORT:-0}"
export INGEST_HOST_PORT="${INGEST_HOST_PORT:-0}" RECEIVER_HOST_PORT="${RECEIVER_HOST_PORT:-0}"
export CONSOLE_HOST_PORT="${CONSOLE_HOST_PORT:-0}"
# No buildx where the legacy builder is all there is; the legacy builder reads the same Dockerfiles.
export DOCKER_BUILDKIT="${DOCKER_BUILDKIT:-0}" COMPOSE_DOCKER_CLI_BUILD="${COMPOSE_DOCKER_CLI_BUILD:-0}"
dc() { docker compose -p "$project" "$@"; }
say() { printf '\033[1m[smoke]\033[0m %s\n' "$*"; }
fail() {
  printf '\033[1m[smoke] FAILED:\033[0m %s\n' "$*" >&2
  dc ps -a >&2 || true
  dc logs --no-color --tail 40 >&2 || true
  exit 1
}
teardown() {
  say "tearing down"
  dc down -v --remove-orphans >/dev/null 2>&1 || true
}
trap teardown EXIT
# A command of the script itself that fails (a `docker compose up --wait` whose container exited, say)
# shows the containers and their logs too, not only its own message.
trap 'fail "line $LINENO: $BASH_COMMAND"' ERR

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
started=$(date +%s)

say "docker compose up --build --wait (RABBITMQ_IMAGE=${RABBITMQ_IMAGE:-default} DELAYED_PLUGIN=${DELAYED_PLUGIN:-default})"
dc up --build --wait
version=$(dc exec -T rabbitmq rabbitmqctl version | tr -d '\r')
# Whether the running broker has the delayed-message plugin's application started (what x-delayed-message needs).
running_apps=$(dc exec -T rabbitmq rabbitmqctl eval 'lists:keymember(rabbitmq_delayed_message_exchange, 1, application:which_applications()).' | tr -d '\r')
case "$running_apps" in
  true) mode=plugin ;;
  false) mode=queues ;;
  *) fail "could not ask the broker for its plugins: $running_apps" ;;
esac
say "broker: RabbitMQ $version; delayed-message plugin $([ "$mode" = plugin ] && echo enabled || echo absent): expecting $mode mode"

worker_log() { dc logs --no-color worker; }
mode_lines() { worker_log | grep -cF "delay mode: $mode" || true; }
workers_in_mode() { [ "$(mode_lines)" -ge "$1" ]; }
wait_for 60 "the worker logs 'delay mode: $mode'" workers_in_mode 1
other=$([ "$mode" = plugin ] && echo queues || echo plugin)
if worker_log | grep -qF "delay mode: $other"; then fail "a worker chose $other mode on a broker that offers $mode mode"; fi
say "worker chose $mode mode"

# PUBLISH_TIMEOUT 60 s: room for a loaded 2-core machine. Publishers declare nothing: the worker above
# declared the topology when it started.
publish() { dc run --rm -T -e PUBLISH_TIMEOUT=60s worker node dist/cli/main.js publish --url "http://receiver:3000/$1" --data "{\"smoke\":\"$1\"}" >/dev/null; }
# publish_many PATH COUNT [DELAY_MS] [PAUSE_MS] [ROUND]: COUNT callbacks to /PATH/<i>, confirmed, from
# one process (the ingest container has the same image and AMQP_URL, and runs while the workers are
# stopped), in rounds of ROUND (default and at most 500) with PAUSE_MS between rounds.
publish_many() {
  dc exec -T -e PUBLISH_TIMEOUT=60s -e SMOKE_PATH="$1" -e SMOKE_COUNT="$2" -e SMOKE_DELAY="${3:-0}" -e SMOKE_PAUSE="${4:-0}" -e SMOKE_ROUND="${5:-500}" ingest node --input-type=module -e "
    import { setTimeout as sleep } from 'node:timers/promises';
    import { createPublisher, createLogger, loadConfig } from '/app/dist/index.js';
    const config = loadConfig();
    const publisher = createPublisher(config, createLogger('warn'));
    const { SMOKE_PATH: path, SMOKE_COUNT: count, SMOKE_DELAY: delay, SMOKE_PAUSE: pause } = process.env;
    const round = Math.min(500, Number(process.env.SMOKE_ROUND));
    // In rounds of at most 500: at most PUBLISH_BUFFER_LIMIT (1,000) publishes may wait for their confirms.
    for (let from = 0; from < Number(count); from += round) {
      if (from > 0 && Number(pause) > 0) await sleep(Number(pause));
      await Promise.all(Array.from({ length: Math.min(round, Number(count) - from) }, (_, k) =>
        publisher.publish({ url: 'http://receiver:3000/' + path + '/' + (from + k), body: { i: from + k } }, { delay: Number(delay) })));
    }
    await publisher.close();"
}
# Deliveries the receiver answered 200 under /PATH/: "<webhook-id>" per line, one per request.
delivered_ids() { dc logs --no-color receiver | grep -E "POST /$1/[0-9]+ webhook-id=[^ ]+ .* -> 200" | sed -E 's/.*webhook-id=([^ ]+).*/\1/'; }
delivered() { dc logs --no-color receiver | grep -qE "POST /$1 .* -> 200"; }
all_delivered() { [ "$(delivered_ids "$1" | sort -u | wc -l)" -ge "$2" ]; }
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
# The console's dead-letters page, asked inside its container with the compose file's token.
console_lists_dead() {
  dc exec -T console node -e "fetch('http://127.0.0.1:8081/dead-letters', { headers: { authorization: 'Bearer dev-Q7vN2pR9sK4mW8tZ3bY6cH1jD5fL0gA' } })
    .then((r) => r.text()).then((t) => process.exit(t.includes('/gone/smoke-1') ? 0 : 1), () => process.exit(1))"
}
wait_for 60 "the console lists the dead letter /gone/smoke-1" console_lists_dead
say "the console lists it"

# ---- --scale worker=3 shares the work ----
say "docker compose up --wait --scale worker=3"
dc up --wait --no-deps --scale worker=3 worker
running_workers() { [ "$(dc ps --status running --quiet worker | wc -l)" -eq 3 ]; }
wait_for 30 "three worker containers run" running_workers
wait_for 60 "all three workers log 'delay mode: $mode'" workers_in_mode 3
# Successful attempts of one worker replica, from its /metrics.
successes() {
  dc exec -T --index "$1" worker node -e "
    fetch('http://127.0.0.1:9464/metrics').then((r) => r.text()).then((text) => {
      let n = 0;
      for (const line of text.split('\n')) if (line.startsWith('callback_relay_attempts_total{') && line.includes('result=\"success\"')) n += Number(line.split(' ').pop());
      console.log(n);
    });" | tr -d '\r'
}
before=(); for i in 1 2 3; do before[i]=$(successes "$i"); done
publish_many share 300
wait_for 90 "the 300 callbacks of the burst are delivered with three workers" all_delivered share 300
shares=(); for i in 1 2 3; do shares[i]=$(( $(successes "$i") - before[i] )); done
say "three workers shared 300 callbacks: ${shares[1]} + ${shares[2]} + ${shares[3]}"
for i in 1 2 3; do [ "${shares[i]}" -gt 0 ] || fail "worker $i delivered none of the burst: the work was not shared"; done

# ---- docker compose stop worker in the middle of a burst ----
# SMOKE_BURST: a larger burst where the stop would otherwise land after its end (a slow machine).
# Paced at 500 a second (rounds of 100): a fast machine delivers a whole burst published at once before
# `docker compose stop` has stopped the workers (4,000 in plugin mode on 4.0); paced, the burst is still
# being published, and delivered, when they stop, whatever the machine's speed.
burst="${SMOKE_BURST:-2000}"
publish_many drain "$burst" 0 200 100 &
publisher=$!
some_delivered() { [ "$(delivered_ids drain | wc -l)" -ge 100 ]; }
wait_for 60 "the burst starts being delivered" some_delivered
say "docker compose stop worker, in the middle of a burst of $burst callbacks"
stop_started=$(date +%s)
dc stop worker >/dev/null
at_stop=$(delivered_ids drain | sort -u | wc -l)
say "the workers drained and stopped in $(( $(date +%s) - stop_started )) s (DRAIN_TIMEOUT 15 s), $at_stop of $burst delivered by then"
wait "$publisher" || fail "publishing the burst failed"
[ "$at_stop" -lt "$burst" ] || fail "the burst was over before the stop: this machine was too fast for the check"
# Only the workers are waited for: the ingest, busy publishing the burst, may answer its healthcheck late.
dc up --wait --no-deps --scale worker=3 worker >/dev/null
wait_for 120 "every callback of the interrupted burst is delivered" all_delivered drain "$burst"
sleep 3 # late duplicates would show by now
requests=$(delivered_ids drain | wc -l)
distinct=$(delivered_ids drain | sort -u | wc -l)
say "burst across the stop: $distinct of $burst delivered, $requests successful requests"
# A drained stop finishes what is in flight and returns the rest unstarted (docs/operations.md#graceful-shutdown).
# Only deliveries still unfinished when DRAIN_TIMEOUT ran out go back to the queue after their request,
# and may be delivered again: each worker logs how many ("drain timeout", field unfinished).
allowed=$(worker_log | { grep -F '"drain timeout' || true; } | sed -nE 's/.*"unfinished":([0-9]+).*/\1/p' | awk '{ n += $1 } END { print n + 0 }')
returned=$(worker_log | { grep -F '"returned":' || true; } | sed -nE 's/.*"returned":([0-9]+).*/\1/p' | awk '{ n += $1 } END { print n + 0 }')
say "delivered twice: $(( requests - distinct )) (the workers reported $allowed deliveries unfinished at DRAIN_TIMEOUT; they gave back $returned waiting callbacks unattempted)"
[ $(( requests - distinct )) -le "$allowed" ] || fail "$(( requests - distinct )) callbacks were delivered twice across a drained stop, more than the $allowed left unfinished at DRAIN_TIMEOUT"

# ---- the broker container recreated on its volume keeps pending callbacks ----
dc stop worker >/dev/null
publish_many kept/lane 40
publish_many kept/delayed 20 20000 # in the delay path (x-delay or a delay level) for 20 s
say "40 callbacks in the lanes and 20 in the delay path, no worker running: recreating the broker container"
old_id=$(dc ps -q rabbitmq)
dc up -d --wait --force-recreate --no-deps rabbitmq >/dev/null
[ "$(dc ps -q rabbitmq)" != "$old_id" ] || fail "the broker container was not recreated"
dc up --wait --no-deps --scale worker=1 worker >/dev/null
wait_for 120 "the 40 callbacks that waited in the lanes are delivered after the recreation" all_delivered kept/lane 40
wait_for 120 "the 20 delayed callbacks are delivered after the recreation" all_delivered kept/delayed 20
say "broker recreated on its volume: 40 + 20 pending callbacks kept and delivered"

say "passed on RabbitMQ $version in $mode mode ($(( $(date +%s) - started )) s)"
