#!/usr/bin/env bash
# Makes sure a headless-capable Chromium is on PATH for the dashboard's browser tests
# (cmd/delayq/internal/dashboard: they skip, saying why, only when no Chromium can be found). Whatever is
# missing is installed from Debian's chromium package with apt-get (as root,
# or through sudo otherwise). Idempotent and silent when Chromium is there already.
set -euo pipefail

for c in chromium chromium-browser google-chrome; do
	if command -v "$c" >/dev/null 2>&1; then
		exit 0
	fi
done

bash "$(dirname "${BASH_SOURCE[0]}")/ensure-debian-packages.sh" ensure-chromium \
	"install Chromium with your package manager (for the dashboard's browser tests)." \
	chromium -- chromium
