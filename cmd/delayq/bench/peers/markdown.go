package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/delayq/delayq/cmd/delayq/internal/bench"
)

// peerNotes explain, next to each scenario's numbers, what in each queue's design makes them.
var peerNotes = map[string][]string{
	"enqueue": {
		"delayq: `Enqueue` is one script call, and the calls of concurrent producers share script calls (a coalescer, one call in flight); `EnqueueBatch` sends one script call per partition (one partition on a standalone Redis), carrying the whole batch.",
		"asynq: no batch enqueue, so the batch rows are n/a; each `Client.Enqueue` is one script call.",
		"BullMQ: `Queue.add` is one script call; `addBulk` sends one script call per job in one MULTI.",
		"The floors are not queues: one EVALSHA per job of a script that stores the body in a hash and adds the id to a sorted set by the server's time, the least a delay queue does. \"one EVALSHA per job\" sends each job on its own (a batch as one pipeline of its jobs' calls); \"pipelined EVALSHA\" sends the single-job calls of concurrent producers together, one pipeline in flight, as a client that coalesces may. A queue that carries a whole batch in one script call can pass the floors in the batch rows.",
	},
	"memory": {
		"delayq keeps a job as a field of its partition's hash, plus a sorted-set member; asynq and BullMQ keep one hash key per job (about 100 B of key overhead each) plus sorted-set members; BullMQ also appends an entry to its events stream for every job added (capped at about 10,000 entries by default).",
	},
	"precision": {
		"asynq: `ProcessAt` stores the due time as whole Unix seconds (`t.Unix()`), so a job can be handed out up to 1 s before the time asked for; due jobs are moved by a forwarder every `DelayedTaskCheckInterval` (default 5 s, so up to 5 s late; " + asynqDelayedCheck.String() + " for asynq-tuned) and an idle processor polls every `TaskCheckInterval` (default 1 s; " + asynqTaskCheck.String() + " for asynq-tuned). asynq does not report when Redis handed a job out, so only receipt times are measured.",
		"BullMQ: an idle worker waits in a blocking `BZPOPMIN` on its marker key with a timeout set to the next delayed job's due time; Redis checks blocking timeouts `hz` times a second (hz 10 here), so a delayed job can be up to ~100 ms late unless another event wakes the worker first. BullMQ computes due time as the client's `Date.now()` at `add` plus `delay`; the driver rounds the delay up so that no job is asked to run early.",
		"delayq: the worker's own timer fires at the earliest known due time (learned from reserve replies and shard pub/sub notices) and the reserve script compares due times with Redis `TIME`; the Redis-clock rows time the lease (lease deadline − TTR, whole milliseconds).",
	},
	"expiry": {
		"delayq: the scripts that take a lease ending before any other of its partition announce its deadline on the partition's shard channel; every Client that consumes the topic, and every `delayq server` for every topic, sleeps until the first deadline it knows and expires the leases then, in one script call. Nobody consumes the topic in this scenario.",
		"asynq hands an expired lease's task back when its recoverer next runs (every minute) or a processor's lease check finds it; BullMQ moves a stalled job back when a worker's stalled-job check next runs (`stalledInterval`, 30 s by default), and only while some worker of the queue runs. Neither is measured here: both depend on a consumer of the queue polling.",
	},
	"e2e": {
		"Every queue runs 16 handlers that return at once. delayq's worker leases as many jobs as it has free slots in one script call and acks each job with one call; asynq dequeues one task per script call and marks it done with another; BullMQ's worker fetches the next job in the same script call that completes the previous one.",
	},
	"burst": {
		"The harness sets `slowlog-log-slower-than 10000` (10 ms) and `latency-monitor-threshold 10`, resets SLOWLOG and LATENCY just before the due instant, and reports the longest command logged while the burst is delivered.",
		"asynq: the forwarder moves at most 100 due tasks per script call; BullMQ promotes delayed jobs in batches of 1000 per script call; delayq's reserve promotes at most `BulkLimit` (1000) due jobs per call.",
	},
	"http": {
		"delayq's own HTTP API; its peers have none, so only delayq is measured.",
	},
	"scaling": {
		"The backlog's jobs are due over the following hour, so the sorted sets hold every one of them while the probe enqueues. The floors fill their backlog in pipelines of 1000 calls.",
	},
	"scripts": {
		"delayq only: each stage runs one kind of call alone with SLOWLOG recording every command, so that the server time of each script can be read off; this is the profile that guides the optimisation work.",
	},
}

// drivenNotes say how each contestant is set up, and why.
var drivenNotes = map[string]string{
	"delayq":          "as its README shows: a go-redis client with its defaults (`redis.NewClient(&redis.Options{Addr: …})`, a pool of 10 connections per CPU), a `delayq.Client` on it with the default `Config`, `Enqueue` for one job and `EnqueueBatch` for a batch, one `delayq.Worker` with the scenario's concurrency.",
	"asynq":           "as its README shows: one `asynq.NewClient(asynq.RedisClientOpt{Addr: …})` shared by every producer (a Client is safe for concurrent use), `Enqueue` with `ProcessIn` or `ProcessAt`; one `asynq.NewServer(asynq.RedisClientOpt{…}, asynq.Config{Concurrency: …, Queues: {topic: 1}})` with every other setting at its default (`DelayedTaskCheckInterval` 5 s, `TaskCheckInterval` 1 s); an `asynq.Inspector` to see when the queue is empty. Each makes and closes its own go-redis client with asynq's defaults (10 connections per CPU). Only `LogLevel` is raised to warnings, to keep the log readable.",
	"asynq-tuned":     "asynq as above with `DelayedTaskCheckInterval` " + asynqDelayedCheck.String() + " and `TaskCheckInterval` " + asynqTaskCheck.String() + ", far below their defaults, which favours asynq's precision and end-to-end figures (asynq's documentation warns that a low `TaskCheckInterval` may add significant load to Redis). It runs the scenarios with consumers (precision, precision-load, e2e, burst) alone, since the Server's polling plays no part in the others, and it counts as a peer.",
	"bullmq":          "in Node, as BullMQ's guides show: a `Queue` and a `Worker` (with the scenario's `concurrency`) given connection options rather than a shared ioredis instance, so that each makes its own connections, and the Worker sets `maxRetriesPerRequest: null` on its blocking connection itself; `add` for one job, `addBulk` for a batch, concurrent producers as concurrent promises on one Queue; jobs added with `removeOnComplete` and `removeOnFail`, as delayq and asynq delete finished jobs; ioredis at its defaults.",
	"floor":           "not a queue: go-redis with its defaults sends one EVALSHA per job of a minimal script (HSET the body, ZADD the id at the server's time plus the delay); a batch is one pipeline of its jobs' calls. It runs the scenarios that measure enqueue rates alone.",
	"floor-pipelined": "the same script and client, with the single-job calls of concurrent producers sent together: while one pipeline is in flight the calls queue up and leave in the next, and a call with nobody to share with goes out at once. This is what Redis allows a client that coalesces, as delayq's does.",
}

// renderMarkdown writes the report; analysis, hand-written, follows the missed targets.
func renderMarkdown(r *report, chartDir, analysis string) string {
	var b strings.Builder
	b.WriteString("# delayq benchmarks\n\n")
	b.WriteString("delayq measured side by side with [hibiken/asynq](https://github.com/hibiken/asynq) and [BullMQ](https://bullmq.io) on the same redis-server, in the same run: every scenario runs for every queue in turn (the order rotates from run to run), each in a process of its own, with `FLUSHALL` in between. ")
	fmt.Fprintf(&b, "Each figure is the **median (min–max) of %d runs**. \"delayq vs best peer\" divides so that above 1× means delayq is ahead: delayq's figure over the best peer's for rates, the best peer's over delayq's for times and sizes. ", r.Runs)
	b.WriteString("The enqueue tables also show two floors, what Redis allows with no queue around the jobs; they are never counted as peers, and \"delayq vs best floor\" is delayq's distance to them. ")
	b.WriteString("The \"target\" column holds the goals delayq's performance work must reach.\n\n")
	if r.Quick {
		b.WriteString("> **These are quick smoke-run counts, not the real benchmark.**\n\n")
	}
	b.WriteString("## Summary\n\n")
	b.WriteString("The figures a user compares queues by, from the tables below (asynq: the better of its default and tuned set-ups). Rates in jobs/s, higher is better; times and sizes, lower is better.\n\n")
	r.summaryTable(&b)
	b.WriteString("## How these numbers were made\n\n")
	fmt.Fprintf(&b, "```sh\n%s\n```\n\n", r.Command)
	b.WriteString("`make bench-peers` runs `go run .` in `cmd/delayq/bench/peers`, a Go module of its own (so the peers never become dependencies of delayq), which starts its own `redis-server` on a loopback port with default settings and no persistence, runs `npm install` in `cmd/delayq/bench/peers/bullmq` if needed (its package-lock.json pins every version), and rewrites this file, `cmd/delayq/bench/peers/results.json` (every run's raw figures) and the charts. `go run . -from results.json` rewrites the report from saved figures. delayq alone, on any Redis: `delayq bench`, in a binary built with `-tags bench` (`go run -tags bench ./cmd/delayq bench`; `--quick`, `--json`, `--scenarios`, `--cpuprofile`).\n\n")
	b.WriteString("The harness itself sends no job. For every scenario of every queue it starts its own binary again (`-contestant NAME -scenario NAME`), which opens the queue with clients of its own, runs the scenario and writes the result as JSON on stdout, then exits: the producers of one queue never share a process, a Redis client, leftover goroutines or a Go scheduler with another queue's consumers. BullMQ's Go process drives a Node process of its own. Before the scenario, each process warms up on a topic of its own (2,000 jobs enqueued one per call by 16 producers and taken by 16 handlers; the floors only enqueue), and Redis is emptied again, so that no figure includes opening connections or, in Node, compiling the code.\n\n")
	fmt.Fprintf(&b, "- Machine: %d CPUs, %s, %s memory, %s\n", r.Machine.CPUs, r.Machine.CPU, r.Machine.Memory, r.Machine.OS)
	var vs []string
	for _, k := range []string{"delayq", "redis", "go", "asynq", "bullmq", "node"} {
		if v, ok := r.Versions[k]; ok {
			vs = append(vs, fmt.Sprintf("%s %s", k, v))
		}
	}
	fmt.Fprintf(&b, "- Versions: %s\n", strings.Join(vs, ", "))
	fmt.Fprintf(&b, "- Redis: hz %s, no persistence, no `maxmemory` (so nothing is evicted, as BullMQ's production guide requires); one process per queue and scenario (Go for delayq, asynq and the floors; Go driving Node for BullMQ), on the same machine as Redis\n", r.Hz)
	fmt.Fprintf(&b, "- Ran from %s to %s (%s)\n", r.Started.Format("2006-01-02 15:04 UTC"), r.Finished.Format("15:04 UTC"), r.Finished.Sub(r.Started).Round(1e9))
	b.WriteString("- The machine is small and shared (2 cores for Redis, the queue's process and the harness together): expect run-to-run noise of 10–20 % in the rates; compare the queues within one table rather than with other machines.\n\n")
	b.WriteString("## How each queue is driven\n\n")
	for _, q := range r.Contestants {
		if n, ok := drivenNotes[q]; ok {
			fmt.Fprintf(&b, "- **%s**: %s\n", label(q), n)
		}
	}
	b.WriteString("\n")

	var sections strings.Builder
	var miss []missed
	docs := map[string]string{}
	for _, s := range bench.Scenarios() {
		docs[s.Name] = s.Doc
	}
	for _, sc := range r.scenarios() {
		fmt.Fprintf(&sections, "## %s\n\n%s.\n\n", sc, capitalize(docs[sc]))
		miss = append(miss, r.scenarioTable(&sections, sc)...)
		sections.WriteString("\n")
		for _, n := range peerNotes[sc] {
			fmt.Fprintf(&sections, "- %s\n", n)
		}
		r.notes(&sections, sc)
		r.redisProfile(&sections, sc)
		sections.WriteString("\n")
		if sc == "precision" {
			fmt.Fprintf(&sections, "![lateness distribution](%s/lateness.svg)\n\n", chartDir)
		}
		if c, ok := axisCharts[sc]; ok {
			fmt.Fprintf(&sections, "![%s](%s/%s)\n\n", sc, chartDir, c.file)
		}
	}
	b.WriteString("## Targets missed\n\n")
	if len(miss) == 0 {
		b.WriteString("None: delayq meets every target in this run.\n\n")
	} else {
		b.WriteString("| scenario | metric | target | delayq |\n|---|---|---|---|\n")
		for _, m := range miss {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", m.scenario, m.metric, m.target, m.got)
		}
		b.WriteString("\n")
	}
	if analysis = strings.TrimSpace(analysis); analysis != "" {
		b.WriteString(analysis + "\n\n")
	}
	fmt.Fprintf(&b, "![throughput](%s/throughput.svg)\n\n", chartDir)
	b.WriteString(sections.String())
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// redisProfile lists the costliest Redis commands of delayq's first run of a scenario.
func (r *report) redisProfile(b *strings.Builder, scenario string) {
	res := r.results(scenario, "delayq")
	if len(res) == 0 || len(res[0].Stages) == 0 {
		return
	}
	b.WriteString("\n<details><summary>delayq's Redis profile (INFO commandstats, first run)</summary>\n\n")
	b.WriteString("| stage | command | calls | µs/call | total ms |\n|---|---|---:|---:|---:|\n")
	for _, st := range res[0].Stages {
		cmds := slices.Clone(st.Commands)
		for i, c := range cmds {
			if i == 5 {
				break
			}
			fmt.Fprintf(b, "| %s | %s | %d | %.1f | %.1f |\n", st.Name, c.Command, c.Calls, c.UsecPerCall, float64(c.Usec)/1000)
		}
	}
	b.WriteString("\nCommands run inside scripts are counted on their own lines as well as in `evalsha`.\n\n</details>\n")
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
