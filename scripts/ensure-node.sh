#!/usr/bin/env bash
# Makes sure node (18 or newer) and npm are on PATH: a test of the beanstalkd front end runs a
# Node.js beanstalkd client against it (cmd/delayq/internal/beanstalkd/nodeclient, installed with npm ci).
# Whatever is missing is installed from Debian's nodejs and npm packages with apt-get (as root,
# or through sudo otherwise). Idempotent and silent when both are already installed.
set -euo pipefail

node_ok() {
	command -v node >/dev/null 2>&1 && node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)' 2>/dev/null
}

missing=()
node_ok || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ "${#missing[@]}" -eq 0 ]; then
	exit 0
fi

bash "$(dirname "${BASH_SOURCE[0]}")/ensure-debian-packages.sh" ensure-node \
	"install Node.js (18+) and npm with your package manager (for the beanstalkd Node.js client test)." \
	"${missing[@]}" -- node npm

if ! node_ok; then
	echo "ensure-node: node is $(node --version); this distribution's nodejs is too old: install Node.js 18 or newer" >&2
	exit 1
fi
echo "ensure-node: node $(node --version), npm $(npm --version)" >&2
