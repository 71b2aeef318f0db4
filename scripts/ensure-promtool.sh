#!/usr/bin/env bash
# Makes sure promtool is on PATH: a test (cmd/delayq/internal/metrics, TestAlertRules) checks
# docs/prometheus/alerts.yml and runs its unit tests, docs/prometheus/alerts_test.yml, with it.
# If it is missing, installs Debian's prometheus package with apt-get (as root, or through sudo
# otherwise). Idempotent and silent when promtool is there already.
#
# The package ships a Prometheus server whose postinst would start it as a service, listening
# on port 9090. Only promtool is wanted: a policy-rc.d that refuses every start is in place
# while the package installs, and a server the install started after all is stopped.
set -euo pipefail

name=ensure-promtool
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if command -v promtool >/dev/null 2>&1; then
	exit 0
fi

# The prometheus servers running before the install, which are none of this script's business.
before=" $(pgrep -x prometheus | tr '\n' ' ' || true) "

ensure_debian_packages "install promtool (Debian's prometheus package, or a Prometheus release archive) with your package manager." \
	prometheus -- promtool

# With systemd, keep the service from starting at the next boot as well.
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	as_root systemctl disable --now prometheus.service >/dev/null 2>&1 || true
fi
for pid in $(pgrep -x prometheus || true); do
	case "$before" in
	*" $pid "*) ;;
	*)
		echo "ensure-promtool: stopping the Prometheus server (pid $pid) the package install started" >&2
		as_root kill "$pid" || true
		;;
	esac
done
if pgrep -x prometheus >/dev/null 2>&1 && [ "$before" = "  " ]; then
	echo "ensure-promtool: a Prometheus server is still running after the install" >&2
	exit 1
fi
echo "ensure-promtool: $(promtool --version 2>&1 | head -n 1)" >&2
