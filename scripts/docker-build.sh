#!/usr/bin/env bash
# make docker: builds the Docker image (Dockerfile) and checks that it serves and stops cleanly.
#
# It needs a docker command, a running Docker daemon that answers, and the base images of the Dockerfile
# (already present, or pulled from their registry). When any of them is missing — a machine
# without Docker, or without access to Docker Hub — it says so and exits 0: that is no defect
# of delayq and must not fail CI. Once the base images are there, a Dockerfile that does not
# build, or an image that does not serve or stop cleanly, fails.
set -euo pipefail
cd "$(dirname "$0")/.."

image=${DELAYQ_IMAGE:-delayq:dev}

skip() {
	echo "docker-build: skipped: $*" >&2
	exit 0
}

command -v docker >/dev/null 2>&1 || skip "no docker command on PATH; nothing was built (install Docker to build the image)"
# Docker builds through its daemon: the docker command alone cannot. Say so plainly, with
# docker's own reason, rather than leaving a bare "skipped".
rc=0
why=$(timeout 30 docker info 2>&1 >/dev/null) || rc=$?
if [ "$rc" != 0 ]; then
	why=$(printf '%s\n' "$why" | grep -v '^[[:space:]]*$' | tail -n 1 || true)
	if [ "$rc" = 124 ]; then
		why="docker info did not answer within 30 s"
	elif [ -z "$why" ]; then
		why="docker info failed (status $rc)"
	fi
	echo "docker-build: Docker needs a running daemon, and none answers: $why" >&2
	echo "docker-build: start it (sudo systemctl start docker, or open Docker Desktop), or point DOCKER_HOST at one, and run make docker again" >&2
	skip "no Docker daemon; nothing was built"
fi

# The base images: the FROM lines of the Dockerfile with the ARG defaults filled in.
bases=$(awk '
	$1 == "ARG" && index($2, "=") { split($2, kv, "="); arg[kv[1]] = kv[2] }
	$1 == "FROM" {
		img = $2
		for (k in arg) { gsub("\\$\\{" k "\\}", arg[k], img); gsub("\\$" k, arg[k], img) }
		print img
	}' Dockerfile)
for base in $bases; do
	if docker image inspect "$base" >/dev/null 2>&1; then
		continue
	fi
	echo "docker-build: pulling $base" >&2
	timeout 600 docker pull -q "$base" >/dev/null 2>&1 || skip "cannot obtain the base image $base (no access to its registry?); nothing was built"
done

echo "docker-build: building $image" >&2
docker build -q -t "$image" . >/dev/null

# Smoke test: the image starts its embedded redis-server as its own user, serves the API, and
# exits 0 after a graceful shutdown on docker stop.
cid=$(docker run -d "$image")
trap 'docker rm -f -v "$cid" >/dev/null 2>&1 || true' EXIT
for _ in $(seq 1 60); do
	if docker logs "$cid" 2>&1 | grep -q "listening on"; then
		break
	fi
	if [ "$(docker inspect -f '{{.State.Running}}' "$cid")" != true ]; then
		break
	fi
	sleep 1
done
if ! docker logs "$cid" 2>&1 | grep -q "listening on"; then
	docker logs "$cid" >&2 || true
	echo "docker-build: the server in $image did not start" >&2
	exit 1
fi
docker exec "$cid" delayq enqueue smoke --id smoke-1 --body '{"ok":true}' >/dev/null
docker exec "$cid" delayq get smoke smoke-1 >/dev/null
[ "$(docker exec "$cid" id -u)" != 0 ] || { echo "docker-build: the server runs as root" >&2; exit 1; }
docker stop -t 40 "$cid" >/dev/null
code=$(docker inspect -f '{{.State.ExitCode}}' "$cid")
if [ "$code" != 0 ]; then
	docker logs "$cid" >&2 || true
	echo "docker-build: the server exited with status $code after docker stop, want 0" >&2
	exit 1
fi
echo "docker-build: $image builds, serves, and stops cleanly" >&2
