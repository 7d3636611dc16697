#!/usr/bin/env bash
# Creates one broker account per role (callback-relay accounts; docs/security.md) on a broker of the
# project's own whose management API answers as guest (docker compose's, or scripts/local-broker.sh's
# node), and prints each role's AMQP URL as a shell assignment (PRODUCER_URL=…, WORKER_URL=…) for eval.
# The passwords are generated once and kept in STATE/accounts.env (mode 600); importing again is harmless.
#   scripts/broker-accounts.sh STATE AMQP_HOST:PORT MANAGEMENT_URL
set -euo pipefail
cd "$(dirname "$0")/.."
state=$1 amqp=$2 management=$3
env_file=$state/accounts.env
roles="producer ingest worker console admin"
if [ ! -f "$env_file" ]; then
  (
    umask 077
    for role in $roles; do
      echo "ACCOUNT_PASSWORD_${role^^}=$(node -e 'process.stdout.write(require("node:crypto").randomBytes(24).toString("hex"))')"
    done >"$env_file"
  )
fi
set -a
# shellcheck source=/dev/null
. "$env_file"
set +a
node dist/cli/main.js accounts --format definitions |
  MANAGEMENT_URL=$management node -e '
    const chunks = [];
    process.stdin.on("data", (chunk) => chunks.push(chunk)).on("end", async () => {
      const answer = await fetch(process.env.MANAGEMENT_URL + "/api/definitions", {
        method: "POST",
        headers: { authorization: "Basic " + Buffer.from("guest:guest").toString("base64"), "content-type": "application/json" },
        body: Buffer.concat(chunks),
      }).catch((error) => ({ ok: false, status: error.message, text: async () => "" }));
      if (!answer.ok) console.error("importing the broker accounts:", answer.status, await answer.text());
      process.exit(answer.ok ? 0 : 1);
    });'
prefix=${TOPOLOGY_PREFIX:-callback-relay}
for role in $roles; do
  password_var=ACCOUNT_PASSWORD_${role^^}
  echo "${role^^}_URL=amqp://$prefix-$role:${!password_var}@$amqp"
done
