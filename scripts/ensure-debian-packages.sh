#!/usr/bin/env bash
# Installs Debian packages with apt-get, as root or through sudo otherwise, for the scripts that
# make sure the tools delayq's tests need are on PATH.
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

as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		echo "$name: need root or sudo to run: $*" >&2
		exit 1
	fi
}

echo "$name: installing ${packages[*]} with apt-get" >&2
as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null

for c in "${commands[@]}"; do
	if ! command -v "$c" >/dev/null 2>&1; then
		echo "$name: $c still not on PATH after installing ${packages[*]} (PATH=$PATH)" >&2
		exit 1
	fi
done
