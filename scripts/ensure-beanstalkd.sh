#!/usr/bin/env bash
# Makes sure the beanstalkd binary is on PATH: the tests of the beanstalkd front end compare its
# replies with a real beanstalkd's, which cmd/delayq/internal/beanstalktest starts on a free loopback port.
# If it is missing, installs Debian's beanstalkd package with apt-get (as root, or through sudo
# otherwise). Idempotent and silent when beanstalkd is already installed.
#
# The package's install would start a beanstalkd service on 11300. The tests never use it: a
# policy-rc.d that refuses every start is in place while the package installs, and if a service
# is running after all that was not running before, only that one is stopped and disabled.
set -euo pipefail

name=ensure-beanstalkd
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if command -v beanstalkd >/dev/null 2>&1; then
	exit 0
fi

# pids lists the process ids of running beanstalkd processes, one a line.
pids() {
	pgrep -x beanstalkd 2>/dev/null | sort || true
}
before=$(pids)

ensure_debian_packages "install beanstalkd 1.12 (Debian's beanstalkd package) with your package manager." \
	beanstalkd -- beanstalkd

# Stop what the install started despite the policy (a system without invoke-rc.d); only that.
started=$(comm -13 <(printf '%s\n' "$before") <(pids) | sed '/^$/d')
if [ -n "$started" ]; then
	echo "ensure-beanstalkd: stopping the beanstalkd service the package install started" >&2
	if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
		as_root systemctl disable --now beanstalkd.service beanstalkd.socket >/dev/null 2>&1 || true
	fi
	while read -r pid; do
		[ -n "$pid" ] && as_root kill "$pid" 2>/dev/null || true
	done <<<"$started"
fi
echo "ensure-beanstalkd: $(beanstalkd -v 2>&1 | head -n 1)" >&2
