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

if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
	exit 0
fi

bash "$(dirname "${BASH_SOURCE[0]}")/ensure-debian-packages.sh" ensure-redis \
	"install Redis 7 (redis-server, redis-cli) with your package manager." \
	redis-server redis-tools redis-sentinel -- redis-server redis-cli
echo "ensure-redis: $(redis-server --version)" >&2
