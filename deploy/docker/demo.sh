#!/bin/sh
# The demo in one container (docs/operations.md, Docker):
#   docker run --rm --entrypoint /app/deploy/docker/demo.sh psd2-gateway
# starts the embedded default as `npm start` does (config/default.yaml: the dev PKI made on first
# start, the demo QTSP, the demo bank and the gateway, all on the container's loopback), waits until
# its admin listener says ready, then sends `psd2-gateway demo`'s signed requests through it and
# prints what came back, as `npm run demo` does. Exits with the demo's status.
set -eu
cd "$(dirname "$0")/../.."
mkdir -p var
node dist/main.js start > var/gateway.log 2>&1 &
gateway=$!
tries=0
until node dist/main.js health --ready > /dev/null 2>&1; do
  if ! kill -0 "$gateway" 2> /dev/null || [ "$tries" -ge 120 ]; then
    echo "the gateway did not become ready; its log:" >&2
    cat var/gateway.log >&2
    exit 1
  fi
  tries=$((tries + 1))
  sleep 1
done
status=0
node dist/main.js demo || status=$?
kill "$gateway"
wait "$gateway" || true
exit "$status"
