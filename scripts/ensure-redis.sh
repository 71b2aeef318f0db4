#!/usr/bin/env bash
# Makes sure redis-server and redis-cli are on PATH: the tests start real
# Redis processes through internal/redistest. If either is missing, installs
# Debian's redis-server, redis-tools and redis-sentinel packages with apt-get
# (as root, or through sudo otherwise). Idempotent and silent when Redis is
# already installed.
#
# Debian's packaged redis-server/redis-sentinel services are left alone: the
# tests never use their ports (6379, 26379), they pick free ports of their own.
set -euo pipefail

have_redis() {
	command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1
}

if have_redis; then
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-redis: redis-server and redis-cli are required but not on PATH, and apt-get is not available." >&2
	echo "ensure-redis: install Redis 7 (redis-server, redis-cli) with your package manager." >&2
	exit 1
fi

as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		echo "ensure-redis: need root or sudo to run: $*" >&2
		exit 1
	fi
}

echo "ensure-redis: installing redis-server redis-tools redis-sentinel with apt-get" >&2
as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	redis-server redis-tools redis-sentinel >/dev/null

if ! have_redis; then
	echo "ensure-redis: redis-server/redis-cli still not on PATH after installing (PATH=$PATH)" >&2
	exit 1
fi
echo "ensure-redis: $(redis-server --version)" >&2
