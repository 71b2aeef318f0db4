package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// bodyWidth is how much of a body a table row shows.
const bodyWidth = 60

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// printJob writes one job as a list of fields.
func printJob(w io.Writer, j *apiv1.Job) {
	tw := newTable(w)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, v)
		}
	}
	row("topic", j.Topic)
	row("id", j.ID)
	row("state", j.State)
	row("run_at", j.RunAt.String())
	row("created_at", j.CreatedAt.String())
	row("attempts", strconv.Itoa(j.Attempts))
	if j.NoRetryLimit() {
		row("max_retries", "no limit")
	} else {
		row("max_retries", strconv.Itoa(j.MaxRetries))
	}
	row("snoozes", strconv.Itoa(j.Snoozes))
	if j.MaxSnoozes == 0 {
		row("max_snoozes", "no limit")
	} else {
		row("max_snoozes", strconv.Itoa(j.MaxSnoozes))
	}
	row("ttr", apiv1.FormatMs(j.TTRMs))
	row("priority", strconv.Itoa(j.Priority))
	if j.BeanstalkdPriority != nil {
		row("beanstalkd_priority", strconv.FormatUint(uint64(*j.BeanstalkdPriority), 10))
	}
	if len(j.BackoffMs) > 0 {
		steps := make([]string, len(j.BackoffMs))
		for i, ms := range j.BackoffMs {
			steps[i] = apiv1.FormatMs(ms)
		}
		row("backoff", strings.Join(steps, ","))
	}
	if j.UniqueForMs > 0 {
		row("unique_for", apiv1.FormatMs(j.UniqueForMs))
	}
	if j.Replaces > 0 {
		row("replaces", strconv.Itoa(j.Replaces))
	}
	if j.ReplacedAt != nil {
		row("replaced_at", j.ReplacedAt.String())
	}
	row("callback_url", j.CallbackURL)
	row("last_error", oneLine(j.LastError))
	row("lease", j.Lease)
	if j.LeaseDeadline != nil {
		row("lease_deadline", j.LeaseDeadline.String())
	}
	if j.DiedAt != nil {
		row("died_at", j.DiedAt.String())
	}
	printHeaders(tw, j.Headers)
	row("body", bodyText(j))
	tw.Flush()
}

// printEndedJob writes a job that ended and keeps its id taken as a list of fields.
func printEndedJob(w io.Writer, j *apiv1.EndedJob) {
	tw := newTable(w)
	fmt.Fprintf(tw, "topic\t%s\n", j.Topic)
	fmt.Fprintf(tw, "id\t%s\n", j.ID)
	fmt.Fprintf(tw, "state\t%s\n", j.State)
	fmt.Fprintf(tw, "outcome\t%s\n", j.Outcome)
	fmt.Fprintf(tw, "ended_at\t%s\n", j.EndedAt)
	tw.Flush()
}

// printHeaders writes a job's headers as rows of a field list, one header a row, by name.
func printHeaders(w io.Writer, headers map[string]string) {
	label := "headers"
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		fmt.Fprintf(w, "%s\t%s: %s\n", label, name, oneLine(headers[name]))
		label = ""
	}
}

// printJobs writes jobs as a table, one row each, with the lease columns when withLease.
func printJobs(w io.Writer, jobs []*apiv1.Job, withLease bool) {
	tw := newTable(w)
	if withLease {
		fmt.Fprintln(tw, "ID\tATTEMPTS\tRUN_AT\tLEASE_DEADLINE\tLEASE\tBODY")
	} else {
		fmt.Fprintln(tw, "ID\tSTATE\tATTEMPTS\tRUN_AT\tLAST_ERROR\tBODY")
	}
	for _, j := range jobs {
		body := truncate(bodyText(j), bodyWidth)
		if withLease {
			deadline := ""
			if j.LeaseDeadline != nil {
				deadline = j.LeaseDeadline.String()
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", j.ID, j.Attempts, j.RunAt, deadline, j.Lease, body)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", j.ID, j.State, j.Attempts, j.RunAt, truncate(oneLine(j.LastError), 40), body)
		}
	}
	tw.Flush()
}

// printTopics writes topic counts as a table.
func printTopics(w io.Writer, topics []apiv1.TopicStats) {
	tw := newTable(w)
	fmt.Fprintln(tw, "TOPIC\tDELAYED\tREADY\tRESERVED\tDEAD\tNEXT_RUN_AT")
	for _, t := range topics {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\n", t.Name, t.Delayed, t.Ready, t.Reserved, t.Dead, nextRun(t.NextRunAt))
	}
	tw.Flush()
}

// printStats writes one topic's counts as a list of fields.
func printStats(w io.Writer, s *apiv1.TopicStats) {
	tw := newTable(w)
	fmt.Fprintf(tw, "topic\t%s\n", s.Name)
	fmt.Fprintf(tw, "delayed\t%d\n", s.Delayed)
	fmt.Fprintf(tw, "ready\t%d\n", s.Ready)
	fmt.Fprintf(tw, "reserved\t%d\n", s.Reserved)
	fmt.Fprintf(tw, "dead\t%d\n", s.Dead)
	fmt.Fprintf(tw, "next_run_at\t%s\n", nextRun(s.NextRunAt))
	fmt.Fprintf(tw, "oldest_ready\t%s\n", apiv1.FormatMs(s.OldestReadyMs))
	fmt.Fprintf(tw, "paused\t%t\n", s.Paused)
	fmt.Fprintf(tw, "rate_limit\t%s\n", rateLimit(s.Limits))
	fmt.Fprintf(tw, "concurrency_limit\t%s\n", orNone(s.Limits.Concurrency))
	fmt.Fprintf(tw, "partitions\t%d\n", s.Partitions)
	fmt.Fprintf(tw, "leases_expired\t%d\n", s.LeasesExpired)
	fmt.Fprintf(tw, "default_unique_for\t%s\n", defaultUniqueFor(s.Defaults))
	tw.Flush()
}

// defaultUniqueFor writes a topic's default unique_for: a duration, "none" for 0, or "-" when
// the topic leaves it to the server.
func defaultUniqueFor(d *apiv1.TopicDefaults) string {
	switch {
	case d == nil || d.UniqueForMs == nil:
		return "-"
	case *d.UniqueForMs == 0:
		return "none"
	}
	return apiv1.FormatMs(*d.UniqueForMs)
}

// printSchedule writes one schedule as a list of fields.
func printSchedule(w io.Writer, s *apiv1.Schedule) {
	tw := newTable(w)
	fmt.Fprintf(tw, "name\t%s\n", s.Name)
	fmt.Fprintf(tw, "cron\t%s\n", s.Cron)
	fmt.Fprintf(tw, "timezone\t%s\n", s.Timezone)
	fmt.Fprintf(tw, "topic\t%s\n", s.Topic)
	if s.StartAt != nil {
		fmt.Fprintf(tw, "start_at\t%s\n", s.StartAt)
	}
	if s.EndAt != nil {
		fmt.Fprintf(tw, "end_at\t%s\n", s.EndAt)
	}
	fmt.Fprintf(tw, "missed\t%s\n", s.Missed)
	fmt.Fprintf(tw, "paused\t%t\n", s.Paused)
	fmt.Fprintf(tw, "last_tick\t%s\n", nextRun(s.LastTick))
	if s.SkippedTicks > 0 {
		fmt.Fprintf(tw, "skipped_ticks\t%d\n", s.SkippedTicks)
	}
	for i, t := range s.NextRuns {
		label := ""
		if i == 0 {
			label = "next_runs"
		}
		fmt.Fprintf(tw, "%s\t%s\n", label, t)
	}
	if j := s.Job; j != nil {
		fmt.Fprintf(tw, "job\tttr %s, max_retries %d, priority %d\n", apiv1.FormatMs(deref(j.TTRMs)), deref(j.MaxRetries), deref(j.Priority))
		if j.CallbackURL != nil {
			fmt.Fprintf(tw, "callback_url\t%s\n", *j.CallbackURL)
		}
		printHeaders(tw, j.Headers)
		fmt.Fprintf(tw, "body\t%s\n", bodyText(&apiv1.Job{Body: j.Body, BodyBase64: j.BodyBase64}))
	}
	tw.Flush()
}

// printSchedules writes schedules as a table, one row each.
func printSchedules(w io.Writer, list []apiv1.Schedule) {
	tw := newTable(w)
	fmt.Fprintln(tw, "NAME\tCRON\tTIMEZONE\tTOPIC\tPAUSED\tLAST_TICK\tNEXT_RUN")
	for _, s := range list {
		next := "-"
		if len(s.NextRuns) > 0 {
			next = s.NextRuns[0].String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%t\t%s\t%s\n", s.Name, s.Cron, s.Timezone, s.Topic, s.Paused, nextRun(s.LastTick), next)
	}
	tw.Flush()
}

// deref returns *p, or zero for nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// rateLimit writes a topic's rate limit as "100 per 1s", or "-" when it has none.
func rateLimit(l apiv1.TopicLimits) string {
	if l.Rate == 0 {
		return "-"
	}
	return fmt.Sprintf("%d per %s", l.Rate, apiv1.FormatMs(l.PeriodMs))
}

// orNone writes a limit, or "-" for 0 (none).
func orNone(n int64) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

func nextRun(t *apiv1.Time) string {
	if t == nil {
		return "-"
	}
	return t.String()
}

// bodyText shows a JSON body as its text and a binary one as base64:<data>.
func bodyText(j *apiv1.Job) string {
	if j.BodyBase64 != nil {
		return "base64:" + *j.BodyBase64
	}
	return oneLine(string(j.Body))
}

// oneLine replaces line breaks and tabs, which would break a table.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ").Replace(s)
}

// truncate cuts s to at most n runes, marking the cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
