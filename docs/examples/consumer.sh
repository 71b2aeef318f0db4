#!/usr/bin/env bash
# A delayq consumer over HTTP with curl and jq.
#
# It reserves one job at a time, works on it while a background loop renews its lease (touch),
# then acks it, or nacks it when the work failed. Run it as:
#
#     DELAYQ_URL=http://127.0.0.1:7070 DELAYQ_TOPIC=orders bash consumer.sh
#
# Settings, from the environment:
#   DELAYQ_URL    the server (default http://127.0.0.1:7070)
#   DELAYQ_TOPIC  the topic to consume (default orders)
#   DELAYQ_TOKEN  an API token, when the server requires one
#   DELAYQ_DRAIN  1: take the jobs that are due now, then exit, instead of waiting for more
set -euo pipefail

url=${DELAYQ_URL:-http://127.0.0.1:7070}
url=${url%/}
topic=${DELAYQ_TOPIC:-orders}
wait_ms=30000 # a long poll: the server answers as soon as a job is due
if [ "${DELAYQ_DRAIN:-}" = 1 ]; then wait_ms=0; fi
auth=()
if [ -n "${DELAYQ_TOKEN:-}" ]; then auth=(-H "Authorization: Bearer $DELAYQ_TOKEN"); fi

# api PATH JSON: POSTs one request; prints the answer's body and, on its last line, the HTTP
# status.
api() {
	curl -sS -X POST ${auth[@]+"${auth[@]}"} -H 'Content-Type: application/json' --data "$2" \
		--max-time $((wait_ms / 1000 + 10)) -w '\n%{http_code}' "$url$1"
}

# work JOB: the job's actual work; replace it with yours. Failing (a non-zero status) nacks
# the job, with the last line of its standard error as the reason. This one understands the
# demonstration bodies of docs/consumers.md: {"work_ms": n} takes n milliseconds,
# {"fail": "why"} fails with that reason.
work() {
	local ms
	ms=$(jq -r '.body | objects | .work_ms // 0' <<<"$1")
	sleep "$(awk "BEGIN { print ${ms:-0} / 1000 }")"
	if jq -e '.body | objects | has("fail")' <<<"$1" >/dev/null; then
		jq -r '.body.fail' <<<"$1" >&2
		return 1
	fi
	echo "processed $(jq -r .id <<<"$1") $(jq -c .body <<<"$1")"
}

# keep_lease PATH LEASE TTR_MS: touches the lease every third of its TTR until killed, so that a
# long piece of work keeps the job: without touches, the lease ends after the TTR and the job is
# delivered again.
keep_lease() {
	local out status
	while sleep "$(awk "BEGIN { print $3 / 3000 }")"; do
		out=$(api "$1/touch" "$(jq -nc --arg lease "$2" '{lease: $lease}')") || continue
		status=${out##*$'\n'}
		case $status in
		200) echo "touched $id lease until $(jq -r .lease_deadline <<<"${out%$'\n'*}")" ;;
		409) echo "lost $id: $(jq -r .error.message <<<"${out%$'\n'*}")"; return ;;
		*) echo "touch failed with status $status, trying again" >&2 ;;
		esac
	done
}

# settle PATH ACTION JSON: acks or nacks a job. Retrying is safe: a repeated ack or nack answers
# what the first did.
settle() {
	local out status try
	for try in 1 2 3 4 5; do
		out=$(api "$1/$2" "$3") || out=$'\n000'
		status=${out##*$'\n'}
		case $status in
		204) return 0 ;;
		409) echo "lost $id: $(jq -r .error.message <<<"${out%$'\n'*}")"; return 1 ;;
		000 | 5??) sleep "$try" ;;
		*) echo "$2 refused with status $status: ${out%$'\n'*}" >&2; return 1 ;;
		esac
	done
	echo "$2 failed: the job comes back after its TTR" >&2
	return 1
}

while :; do
	out=$(api "/v1/topics/$topic/reserve" "{\"max\": 1, \"wait_ms\": $wait_ms}") || out=$'\n000'
	status=${out##*$'\n'}
	if [ "$status" != 200 ]; then
		if [ "${DELAYQ_DRAIN:-}" = 1 ]; then
			echo "reserve failed with status $status: ${out%$'\n'*}" >&2
			exit 1
		fi
		echo "reserve failed with status $status, trying again in 1 s" >&2
		sleep 1
		continue
	fi
	job=$(jq -c '.jobs[0] // empty' <<<"${out%$'\n'*}")
	if [ -z "$job" ]; then
		if [ "${DELAYQ_DRAIN:-}" = 1 ]; then exit 0; fi
		continue
	fi
	id=$(jq -r .id <<<"$job")
	lease=$(jq -r .lease <<<"$job")
	path="/v1/topics/$topic/jobs/$(jq -rn --arg id "$id" '$id | @uri')"

	keep_lease "$path" "$lease" "$(jq -r .ttr_ms <<<"$job")" &
	keeper=$!
	errfile=$(mktemp)
	if work "$job" 2>"$errfile"; then
		kill "$keeper" 2>/dev/null || true
		wait "$keeper" 2>/dev/null || true
		if settle "$path" ack "$(jq -nc --arg lease "$lease" '{lease: $lease}')"; then echo "acked $id"; fi
	else
		kill "$keeper" 2>/dev/null || true
		wait "$keeper" 2>/dev/null || true
		reason=$(tail -n 1 "$errfile")
		if settle "$path" nack "$(jq -nc --arg lease "$lease" --arg error "$reason" '{lease: $lease, error: $error}')"; then
			echo "nacked $id: $reason"
		fi
	fi
	rm -f "$errfile"
done
