#!/usr/bin/env bash
# Makes sure PostgreSQL's server binaries (initdb, postgres) are installed: the tests of
# internal/archive start throwaway servers of their own through internal/pgtest, which finds
# them in /usr/lib/postgresql/<version>/bin (Debian) or on PATH. If they are missing, installs
# Debian's postgresql package with apt-get (as root, or through sudo otherwise). Idempotent and
# silent when PostgreSQL is already installed.
#
# The package's install creates a cluster ("main", port 5432 unless taken) and starts it. The
# tests never use it: a policy-rc.d that refuses every start is in place while the package
# installs, and any cluster the install created is stopped afterwards. Clusters that were there
# before are left alone.
set -euo pipefail

name=ensure-postgres
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

have_initdb() {
	compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null 2>&1
}

if have_initdb; then
	exit 0
fi

# clusters lists "version name" of every cluster postgresql-common knows, one a line.
clusters() {
	if command -v pg_lsclusters >/dev/null 2>&1; then
		pg_lsclusters --no-header 2>/dev/null | awk '{print $1, $2}' | sort
	fi
}
before=$(clusters)

ensure_debian_packages "install the PostgreSQL server (Debian's postgresql package) with your package manager." \
	postgresql --

# Stop the clusters the install created (and keep them from starting at boot); only those.
created=$(comm -13 <(printf '%s\n' "$before") <(clusters) | sed '/^$/d')
while read -r version name; do
	[ -n "$version" ] || continue
	echo "ensure-postgres: stopping cluster $version/$name, which the package install created" >&2
	as_root pg_ctlcluster "$version" "$name" stop >/dev/null 2>&1 || true
	conf="/etc/postgresql/$version/$name/start.conf"
	if [ -f "$conf" ]; then
		echo manual | as_root tee "$conf" >/dev/null
	fi
done <<<"$created"

if ! have_initdb; then
	echo "ensure-postgres: initdb still not found after installing postgresql" >&2
	exit 1
fi
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
echo "ensure-postgres: $("${bin:-$(dirname "$(command -v initdb)")}/initdb" --version)" >&2
