#!/usr/bin/env bash
# Compiles rabbitmq_delayed_message_exchange (the `x-delayed-message` exchange type) from its source
# into an exploded plugin directory, the form a RabbitMQ node loads from its plugins folder:
#
#   OUT_DIR/rabbitmq_delayed_message_exchange-<PLUGIN_VSN>/ebin/*.beam
#   OUT_DIR/rabbitmq_delayed_message_exchange-<PLUGIN_VSN>/ebin/rabbitmq_delayed_message_exchange.app
#
# rabbitmq/Dockerfile builds the broker image's plugin with it (which is why it lives in that
# image's build context), and test/integration/delayed-plugin-build.test.ts runs the same steps
# against the local broker, so a broken step fails the tests instead of a user's image build.
#
# Usage:
#   PLUGIN_VSN=4.2.0 BROKER_PLUGINS_DIR=/opt/rabbitmq/plugins rabbitmq/build-delayed-plugin.sh SRC_DIR OUT_DIR
#
#   SRC_DIR             the plugin's source tree (a checkout of rabbitmq-delayed-message-exchange):
#                       its modules are SRC_DIR/src/*.erl
#   OUT_DIR             created if missing; receives the plugin directory (an older build is replaced)
#   PLUGIN_VSN          the version written into the .app: the release tag without its "v"
#   BROKER_PLUGINS_DIR  the plugins folder of the broker that will run the plugin. The modules are
#                       compiled against the rabbit_common and rabbit found there (directories or .ez
#                       archives), so records and macros are the ones that broker uses.
#
# The `erlc` on PATH must belong to the broker's Erlang/OTP major: a module compiled by a newer OTP
# may not load on an older one.
#
# Why not the plugin's own Makefile: its erlang.mk build fetches the whole rabbitmq-server source
# tree (unpinned) to get those two applications. The plugin is a handful of modules with no build
# step beyond erlc, and the .app the Makefile would generate (from PROJECT_DESCRIPTION, PROJECT_MOD
# and PROJECT_APP_EXTRA_KEYS) is written here.
set -euo pipefail

usage() {
  echo "usage: PLUGIN_VSN=<version> BROKER_PLUGINS_DIR=<dir> $0 SRC_DIR OUT_DIR" >&2
  exit 2
}
fail() {
  echo "build-delayed-plugin: $*" >&2
  exit 1
}

[ $# -eq 2 ] || usage
src_dir=$1
out_dir=$2
vsn=${PLUGIN_VSN:-}
broker_plugins=${BROKER_PLUGINS_DIR:-}
app=rabbitmq_delayed_message_exchange

[ -n "$vsn" ] || fail "PLUGIN_VSN is not set (the plugin version, e.g. 4.2.0)"
printf '%s' "$vsn" | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+$' || fail "PLUGIN_VSN must look like 4.2.0, got '$vsn'"
[ -n "$broker_plugins" ] || fail "BROKER_PLUGINS_DIR is not set (the broker's plugins folder)"
[ -d "$broker_plugins" ] || fail "BROKER_PLUGINS_DIR=$broker_plugins is not a directory"
command -v erlc >/dev/null 2>&1 || fail "erlc not found on PATH (Debian: apt-get install erlang-base)"

shopt -s nullglob
sources=("$src_dir"/src/*.erl)
[ ${#sources[@]} -gt 0 ] || fail "no Erlang modules in SRC_DIR/src: $src_dir/src/*.erl"
[ -f "$src_dir/src/rabbit_delayed_message_app.erl" ] || fail "$src_dir/src/rabbit_delayed_message_app.erl missing: not the delayed-message plugin's source?"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The include_lib("rabbit_common/include/...") and ("rabbit/include/...") directives resolve through
# the code path (ERL_LIBS). An application shipped as an .ez archive is unpacked first: erlc reads
# headers from directories only.
mkdir "$work/lib"
for dep in rabbit_common rabbit; do
  found=("$broker_plugins/$dep"-[0-9]*)
  [ ${#found[@]} -eq 1 ] || fail "expected one $dep-<version> (directory or .ez) in $broker_plugins, found ${#found[@]}"
  case ${found[0]} in
    *.ez) erl -noshell -eval "{ok, _} = zip:extract(\"${found[0]}\", [{cwd, \"$work/lib\"}]), halt()." ;;
    *) ln -s "$(cd "${found[0]}" && pwd)" "$work/lib/$(basename "${found[0]}")" ;;
  esac
done
[ -n "$(echo "$work"/lib/rabbit_common-*/include/rabbit.hrl)" ] || fail "rabbit_common in $broker_plugins has no include/rabbit.hrl"

ebin="$work/$app-$vsn/ebin"
mkdir -p "$ebin"
# Any other application the modules include headers from is taken from the broker's folder as is.
# +deterministic: the same source and broker give byte-identical modules (no paths or times inside).
ERL_LIBS="$work/lib:$broker_plugins" erlc +debug_info +deterministic -o "$ebin" "${sources[@]}"

modules=$(for file in "${sources[@]}"; do basename "$file" .erl; done | paste -sd, -)
# broker_version_requirements is empty: the modules were compiled against this very broker's
# headers, which is a tighter match than a version range.
cat >"$ebin/$app.app" <<EOF
{application, $app,
 [{description, "RabbitMQ Delayed Message Exchange"},
  {vsn, "$vsn"},
  {modules, [${modules//,/, }]},
  {registered, []},
  {mod, {rabbit_delayed_message_app, []}},
  {env, []},
  {applications, [kernel, stdlib, rabbit_common, rabbit]},
  {broker_version_requirements, []}]}.
EOF

# The .app must parse and name a compiled module for every module it lists: a node would refuse it
# only at boot.
erl -noshell -eval "
  {ok, [{application, $app, Keys}]} = file:consult(\"$ebin/$app.app\"),
  [true = filelib:is_regular(filename:join(\"$ebin\", atom_to_list(M) ++ \".beam\")) || M <- proplists:get_value(modules, Keys)],
  halt()."

mkdir -p "$out_dir"
rm -rf "${out_dir:?}/$app-$vsn"
cp -R "$work/$app-$vsn" "$out_dir/"
echo "$out_dir/$app-$vsn"
