# Shared by the ensure-*.sh scripts: source it after setting name, which starts every message.

# as_root runs a command as root: directly when this is root, else through sudo.
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

# ensure_debian_packages HINT PACKAGE... [-- COMMAND...] installs the packages with apt-get, with
# no service allowed to start meanwhile (the tests start the servers they need themselves, on
# ports of their own); then each COMMAND must be on PATH. HINT says what to install by hand when
# apt-get is not available.
ensure_debian_packages() {
	bash "$(dirname "${BASH_SOURCE[0]}")/ensure-debian-packages.sh" "$name" "$@"
}
