#!/usr/bin/env bash
# make run: builds delayq and runs `delayq server` with the given arguments. On a terminal the
# server runs as the terminal's foreground job, alone in its process group, so that Ctrl-C
# reaches only the server — which shuts down cleanly and exits 0 — and not make, which would
# report the interrupt as an error. Elsewhere the server replaces this script. The binary goes
# to bin/delayq, or to $DELAYQ_BIN when set.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${DELAYQ_BIN:-bin/delayq}
bash scripts/ensure-redis.sh
"${GO:-go}" build -o "$bin" ./cmd/delayq
if [ -t 0 ] && [ -t 1 ]; then
	set -m
	"$bin" server "$@" &
	fg %1 >/dev/null
else
	exec "$bin" server "$@"
fi
