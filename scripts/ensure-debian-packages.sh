#!/usr/bin/env bash
# Installs Debian packages with apt-get, as root or through sudo otherwise, with no service
# allowed to start meanwhile, for the scripts that make sure the tools delayq's tests need are on
# PATH.
#
# Usage: ensure-debian-packages.sh NAME HINT PACKAGE... [-- COMMAND...]
#
# NAME starts every message; HINT tells what to install by hand when apt-get is not available.
# Once the packages are installed, each COMMAND must be on PATH, or the script fails.
set -euo pipefail

if [ "$#" -lt 3 ]; then
	echo "usage: $0 NAME HINT PACKAGE... [-- COMMAND...]" >&2
	exit 2
fi
name=$1 hint=$2
shift 2
packages=()
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
	packages+=("$1")
	shift
done
[ "$#" -gt 0 ] && shift # the --
commands=("$@")

if ! command -v apt-get >/dev/null 2>&1; then
	echo "$name: ${packages[*]} required but not installed, and apt-get is not available." >&2
	echo "$name: $hint" >&2
	exit 1
fi

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# invoke-rc.d and deb-systemd-invoke ask /usr/sbin/policy-rc.d before starting a service; exit
# status 101 means "not allowed". So no package starts a service of its own while it installs
# (PostgreSQL's cluster on 5432, beanstalkd on 11300, Prometheus on 9090 ...); one policy that is
# already there is put back afterwards.
policy=/usr/sbin/policy-rc.d
saved=""
if [ -e "$policy" ]; then
	saved=$(as_root mktemp)
	as_root cp -p "$policy" "$saved"
fi
printf '#!/bin/sh\n# %s: no service starts while %s install.\nexit 101\n' "$name" "${packages[*]}" |
	as_root tee "$policy" >/dev/null
as_root chmod 0755 "$policy"
restore_policy() {
	if [ -n "$saved" ]; then
		as_root mv "$saved" "$policy"
	else
		as_root rm -f "$policy"
	fi
}
trap restore_policy EXIT

echo "$name: installing ${packages[*]} with apt-get" >&2
as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null

for c in "${commands[@]}"; do
	if ! command -v "$c" >/dev/null 2>&1; then
		echo "$name: $c still not on PATH after installing ${packages[*]} (PATH=$PATH)" >&2
		exit 1
	fi
done
