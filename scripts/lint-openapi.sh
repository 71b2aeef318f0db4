#!/usr/bin/env bash
# Lints the OpenAPI document with Redocly CLI's recommended rules, from the versions pinned in
# tools/openapi-lint/package-lock.json. Installs Node.js and npm from Debian's packages when
# missing. Redocly CLI needs Node.js 20 or newer: with an older one this says so and stops
# without failing (the Go tests still check the document with kin-openapi).
set -euo pipefail
cd "$(dirname "$0")/../tools/openapi-lint"

if ! command -v npm >/dev/null 2>&1; then
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "lint-openapi: npm is missing and apt-get is not available; install Node.js 20+ and npm" >&2
		exit 1
	fi
	sudo_=""
	[ "$(id -u)" -eq 0 ] || sudo_="sudo"
	echo "lint-openapi: installing nodejs and npm with apt-get" >&2
	$sudo_ env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	$sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 20 ]; then
	echo "lint-openapi: Node.js $(node --version) is older than 20, which Redocly CLI needs; skipping the lint" >&2
	exit 0
fi
if [ ! -x node_modules/.bin/redocly ]; then
	npm ci --no-audit --no-fund --loglevel=error
fi
node_modules/.bin/redocly lint --extends=recommended --format=stylish ../../internal/httpapi/openapi.json
