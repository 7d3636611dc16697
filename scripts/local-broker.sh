#!/usr/bin/env bash
# A project-local RabbitMQ node (Debian's rabbitmq-server) with its data under DIR:
#   local-broker.sh start DIR   – ports 5672 (AMQP), 15672 (management UI), 15692 (Prometheus)
#   local-broker.sh stop DIR
set -euo pipefail
cmd=$1; dir=$(mkdir -p "$2" && cd "$2" && pwd)
advanced=$(cd "$(dirname "$0")/../rabbitmq" && pwd)/advanced.config
bin=/usr/lib/rabbitmq/bin; [ -x "$bin/rabbitmq-server" ] || bin=$(dirname "$(command -v rabbitmq-server)")
export HOME=$dir RABBITMQ_NODENAME=callback-relay@localhost RABBITMQ_MNESIA_BASE=$dir/mnesia RABBITMQ_LOG_BASE=$dir/log \
  RABBITMQ_CONFIG_FILE=$dir/rabbitmq.conf RABBITMQ_ADVANCED_CONFIG_FILE=$advanced \
  RABBITMQ_ENABLED_PLUGINS_FILE=$dir/enabled_plugins RABBITMQ_PID_FILE=$dir/pid
case $cmd in
  start)
    printf 'listeners.tcp.default = 5672\nmanagement.tcp.port = 15672\n' >"$dir/rabbitmq.conf"
    echo '[rabbitmq_management,rabbitmq_prometheus].' >"$dir/enabled_plugins"
    cd "$dir"  # an Erlang crash dump lands in the working directory
    nohup "$bin/rabbitmq-server" >"$dir/server.log" 2>&1 &
    pid=$!
    echo "[up] RabbitMQ node $RABBITMQ_NODENAME starting (data and logs: $dir)"
    for _ in $(seq 1 120); do
      "$bin/rabbitmq-diagnostics" -q -n "$RABBITMQ_NODENAME" check_port_connectivity >/dev/null 2>&1 && exit 0
      if ! kill -0 "$pid" 2>/dev/null; then
        echo "RabbitMQ failed to start; the end of $dir/server.log:" >&2; tail -5 "$dir/server.log" >&2; exit 1
      fi
      sleep 1
    done
    echo "RabbitMQ did not come up within 120 s; see $dir/server.log" >&2; exit 1
    ;;
  stop)
    "$bin/rabbitmqctl" -n "$RABBITMQ_NODENAME" stop >/dev/null 2>&1 || true
    ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
