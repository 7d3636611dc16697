#!/usr/bin/env bash
# Run before stopping or restarting a RabbitMQ node that serves DELAY_MODE=plugin (see
# docs/plugin-mode.md). Arguments go to rabbitmqctl, e.g. `rabbitmq/before-stop.sh -n rabbit@host`.
#
# It stops the delayed-message plugin's scheduler. On a stop, the node shuts its classic queues down
# tens of milliseconds before that scheduler; a delayed message that falls due in between is handed
# to P.due after its queue process is gone and is deleted from the plugin's store all the same: lost.
# Stopped first, the scheduler hands nothing over; waiting messages stay in the plugin's store and
# fall due when the node is back. Until the node stops, a publish with x-delay makes the broker close
# its connection (541 INTERNAL_ERROR) unconfirmed; the relay reconnects and publishes it again. Other
# publishes are not affected. Running it twice is harmless.
#
# Where it runs: a Kubernetes preStop hook, the ExecStop of a systemd unit, or by hand before
# `rabbitmqctl stop`. A node without the plugin is left as it is. If the node is not stopped after
# all, start the scheduler again:
#   rabbitmqctl eval 'supervisor:restart_child(rabbit_sup, rabbit_delayed_message_sup), rabbit_delayed_message:go().'
set -euo pipefail

exec "${RABBITMQCTL:-rabbitmqctl}" "$@" eval '
  case supervisor:terminate_child(rabbit_sup, rabbit_delayed_message_sup) of
    ok -> delayed_scheduler_stopped;
    {error, not_found} -> no_delayed_message_plugin
  end.'
