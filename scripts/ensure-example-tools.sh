#!/usr/bin/env bash
# Makes sure the tools that run the consumer examples of docs/consumers.md are on PATH:
# python3 (3.8 or newer), node (18 or newer, for its built-in fetch), curl and jq. The Go test
# that runs the examples (cmd/delayq/internal/cli, TestConsumerExamples) needs them. Whatever is missing is
# installed from Debian's packages with apt-get (as root, or through sudo otherwise).
# Idempotent and silent when everything is there already.
set -euo pipefail

python_ok() {
	command -v python3 >/dev/null 2>&1 && python3 -c 'import sys; sys.exit(sys.version_info < (3, 8))' 2>/dev/null
}

node_ok() {
	command -v node >/dev/null 2>&1 && node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)' 2>/dev/null
}

missing=()
python_ok || missing+=(python3)
node_ok || missing+=(nodejs)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v jq >/dev/null 2>&1 || missing+=(jq)
if [ "${#missing[@]}" -eq 0 ]; then
	exit 0
fi

bash "$(dirname "${BASH_SOURCE[0]}")/ensure-debian-packages.sh" ensure-example-tools \
	"install python3 (3.8+), Node.js (18+), curl and jq with your package manager (for the docs/consumers.md examples)." \
	"${missing[@]}" -- python3 node curl jq

if ! python_ok || ! node_ok || ! command -v curl >/dev/null 2>&1 || ! command -v jq >/dev/null 2>&1; then
	echo "ensure-example-tools: still missing after installing (python3 3.8+, node 18+, curl, jq; PATH=$PATH)" >&2
	if command -v node >/dev/null 2>&1; then
		echo "ensure-example-tools: node is $(node --version); this distribution's nodejs may be too old: install Node.js 18 or newer" >&2
	fi
	exit 1
fi
echo "ensure-example-tools: $(python3 --version), node $(node --version), $(jq --version)" >&2
