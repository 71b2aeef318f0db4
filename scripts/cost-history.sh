#!/usr/bin/env bash
# Redis instructions per call of delayq's hot path at each commit named, counted by callgrind:
# a lone Enqueue (a), an EnqueueBatch of 12 (b, per call) and a job's Enqueue, Reserve and Ack
# (c). Deterministic counts, so commits compare without the machine's load in between: this is
# how BENCHMARKS.md lists what each feature cost. Needs valgrind and redis-server on PATH.
#
# Usage: scripts/cost-history.sh [-calls N] COMMIT...
set -euo pipefail

calls=500
if [ "${1:-}" = "-calls" ]; then
	calls=$2
	shift 2
fi
if [ "$#" -eq 0 ]; then
	echo "usage: $0 [-calls N] COMMIT..." >&2
	exit 2
fi
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
src="$root/scripts/costhistory"
work=$(mktemp -d)
trap 'git -C "$root" worktree prune; rm -rf "$work"' EXIT

for commit in "$@"; do
	wt="$work/$commit"
	git -C "$root" worktree add --quiet --detach "$wt" "$commit"
	mkdir -p "$wt/internal/costhistory"
	built=
	for ack in ack_lease.go ack_args.go; do
		rm -f "$wt"/internal/costhistory/*.go
		for f in main.go "$ack"; do
			grep -v '^//go:build ignore$' "$src/$f" >"$wt/internal/costhistory/$f"
		done
		if (cd "$wt" && go build -o "$work/cost-$commit" ./internal/costhistory) 2>/dev/null; then
			built=1
			break
		fi
	done
	if [ -z "$built" ]; then
		echo "$commit: the cost program does not build against this commit's API" >&2
	else
		"$work/cost-$commit" -calls "$calls" | sed "s/^/$commit /"
	fi
	git -C "$root" worktree remove --force "$wt"
done
