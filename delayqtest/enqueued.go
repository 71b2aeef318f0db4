package delayqtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/core"
)

// Match describes the jobs RequireEnqueued and RequireNotEnqueued look for. A zero field
// matches anything, so Match{} matches every job; to require priority 0, say, check the
// returned Job.
type Match struct {
	ID    string
	State delayq.State
	// Body must equal the job's body byte for byte.
	Body []byte
	// JSON, when not nil, must encode (encoding/json) to the same JSON value as the job's body
	// holds: field order, spacing and number forms do not matter.
	JSON     any
	Priority int
	// Delay is the job's RunAt less its CreatedAt, to the millisecond: the delay it was
	// enqueued with, until a retry or a reschedule moves its RunAt.
	Delay time.Duration
	// RunAtFrom and RunAtTo bound the job's RunAt, both included; a zero one leaves that
	// side open.
	RunAtFrom, RunAtTo time.Time
	// Attempts is how many times the job has been delivered.
	Attempts    int
	CallbackURL string
	// Headers must each be among the job's headers with that value (names in any case); the
	// job may have more.
	Headers map[string]string
}

// RequireEnqueued fails t unless topic holds a job that m matches, in any state, dead ones
// included, and returns the first such job in Enqueued's order. Its failure message lists the
// jobs the topic holds.
func RequireEnqueued(t testing.TB, client *delayq.Client, topic string, m Match) *delayq.Job {
	t.Helper()
	jobs := Enqueued(t, client, topic)
	want, err := m.compile()
	if err != nil {
		t.Fatalf("delayqtest: RequireEnqueued(%q, %s): %v", topic, m, err)
		return nil
	}
	for i := range jobs {
		if want.matches(&jobs[i]) {
			return &jobs[i]
		}
	}
	t.Fatalf("delayqtest: topic %q holds no job matching %s; it holds %s", topic, m, describeJobs(jobs))
	return nil
}

// RequireNotEnqueued fails t when topic holds a job that m matches, in any state, dead ones
// included, and lists those jobs.
func RequireNotEnqueued(t testing.TB, client *delayq.Client, topic string, m Match) {
	t.Helper()
	want, err := m.compile()
	if err != nil {
		t.Fatalf("delayqtest: RequireNotEnqueued(%q, %s): %v", topic, m, err)
		return
	}
	var found []delayq.Job
	for _, j := range Enqueued(t, client, topic) {
		if want.matches(&j) {
			found = append(found, j)
		}
	}
	if len(found) > 0 {
		t.Fatalf("delayqtest: topic %q holds %s matching %s", topic, describeJobs(found), m)
	}
}

// Enqueued returns every job topic holds: the delayed ones by due time, then the ready ones in
// delivery order, the reserved ones by lease deadline and the dead ones, each with its state as
// client's clock has it (see AdvanceClock). A topic nobody enqueued to holds none.
func Enqueued(t testing.TB, client *delayq.Client, topic string) []delayq.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	page := min(client.Core(core.Pass).MaxPage(), 500)
	var all []delayq.Job
	for _, state := range []delayq.State{delayq.StateDelayed, delayq.StateReady, delayq.StateReserved, delayq.StateDead} {
		for cursor := ""; ; {
			jobs, next, err := client.Jobs(ctx, topic, state, page, cursor)
			if err != nil {
				t.Fatalf("delayqtest: listing the %s jobs of %q: %v", state, topic, err)
				return nil
			}
			for _, j := range jobs {
				all = append(all, *j)
			}
			if next == "" {
				break
			}
			cursor = next
		}
	}
	return all
}

// matcher is a Match ready to compare jobs with: its JSON decoded once.
type matcher struct {
	Match
	json any
}

func (m Match) compile() (matcher, error) {
	c := matcher{Match: m}
	if m.JSON == nil {
		return c, nil
	}
	raw, err := json.Marshal(m.JSON)
	if err != nil {
		return c, fmt.Errorf("encoding Match.JSON: %w", err)
	}
	err = json.Unmarshal(raw, &c.json)
	return c, err
}

func (m matcher) matches(j *delayq.Job) bool {
	switch {
	case m.ID != "" && j.ID != m.ID,
		m.State != "" && j.State != m.State,
		m.Body != nil && !bytes.Equal(j.Body, m.Body),
		m.Priority != 0 && j.Priority != m.Priority,
		m.Delay != 0 && j.RunAt.Sub(j.CreatedAt) != ceilMs(m.Delay),
		!m.RunAtFrom.IsZero() && j.RunAt.Before(m.RunAtFrom),
		!m.RunAtTo.IsZero() && j.RunAt.After(m.RunAtTo),
		m.Attempts != 0 && j.Attempts != m.Attempts,
		m.CallbackURL != "" && j.CallbackURL != m.CallbackURL:
		return false
	}
	for name, v := range m.Headers {
		if got, ok := j.Headers[strings.ToLower(name)]; !ok || got != v {
			return false
		}
	}
	if m.JSON != nil {
		var got any
		if json.Unmarshal(j.Body, &got) != nil || !reflect.DeepEqual(got, m.json) {
			return false
		}
	}
	return true
}

// String lists the fields of m that are set, for failure messages.
func (m Match) String() string {
	var f []string
	add := func(set bool, format string, v any) {
		if set {
			f = append(f, fmt.Sprintf(format, v))
		}
	}
	add(m.ID != "", "ID: %q", m.ID)
	add(m.State != "", "State: %s", m.State)
	add(m.Body != nil, "Body: %s", shorten(m.Body))
	if m.JSON != nil {
		raw, _ := json.Marshal(m.JSON)
		f = append(f, "JSON: "+shorten(raw))
	}
	add(m.Priority != 0, "Priority: %d", m.Priority)
	add(m.Delay != 0, "Delay: %v", m.Delay)
	add(!m.RunAtFrom.IsZero(), "RunAtFrom: %s", m.RunAtFrom.UTC().Format(time.RFC3339Nano))
	add(!m.RunAtTo.IsZero(), "RunAtTo: %s", m.RunAtTo.UTC().Format(time.RFC3339Nano))
	add(m.Attempts != 0, "Attempts: %d", m.Attempts)
	add(m.CallbackURL != "", "CallbackURL: %q", m.CallbackURL)
	add(len(m.Headers) > 0, "Headers: %v", m.Headers)
	return "{" + strings.Join(f, ", ") + "}"
}

// describeJobs lists jobs one a line, with their bodies shortened.
func describeJobs(jobs []delayq.Job) string {
	if len(jobs) == 0 {
		return "no jobs"
	}
	var b strings.Builder
	if len(jobs) == 1 {
		b.WriteString("1 job:")
	} else {
		fmt.Fprintf(&b, "%d jobs:", len(jobs))
	}
	for _, j := range jobs {
		fmt.Fprintf(&b, "\n\t%q %s priority=%d run_at=%s delay=%v attempts=%d body=%s",
			j.ID, j.State, j.Priority, j.RunAt.Format(time.RFC3339Nano), j.RunAt.Sub(j.CreatedAt), j.Attempts, shorten(j.Body))
		if j.CallbackURL != "" {
			fmt.Fprintf(&b, " callback=%q", j.CallbackURL)
		}
	}
	return b.String()
}

// shorten quotes the first 60 bytes of a body, enough to tell jobs apart without flooding
// the message.
func shorten(body []byte) string {
	const max = 60
	if len(body) <= max {
		return fmt.Sprintf("%q", body)
	}
	return fmt.Sprintf("%q…(%d bytes)", body[:max], len(body))
}

// ceilMs rounds d up to the millisecond, as delayq rounds a Spec's Delay.
func ceilMs(d time.Duration) time.Duration {
	return (d + time.Millisecond - 1).Truncate(time.Millisecond)
}
