package delayqtest

import (
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq"
)

// enqueue adds s to topic or fails t.
func enqueue(t testing.TB, c *delayq.Client, topic string, s delayq.Spec) *delayq.Job {
	t.Helper()
	j, err := c.Enqueue(testContext(t), topic, s)
	if err != nil {
		t.Fatalf("Enqueue(%q): %v", s.ID, err)
	}
	return j
}

func TestRequireEnqueuedMatchesEachField(t *testing.T) {
	t.Parallel()
	c := NewClient(t, delayq.Config{})
	welcome := enqueue(t, c, "mail", delayq.Spec{ID: "welcome", Body: []byte(`{"user": 42, "kind": "welcome"}`), Format: delayq.FormatJSON, Delay: time.Hour, Priority: 5})
	enqueue(t, c, "mail", delayq.Spec{ID: "now", Body: []byte("plain"), CallbackURL: "https://example.com/hook",
		Headers: map[string]string{"tenant": "acme", "lang": "fr"}})
	cases := []struct {
		name   string
		m      Match
		wantID string // "" when nothing may match
	}{
		{"anything", Match{State: delayq.StateDelayed}, "welcome"},
		{"id", Match{ID: "now"}, "now"},
		{"id of none", Match{ID: "nobody"}, ""},
		{"state", Match{State: delayq.StateReady}, "now"},
		{"body", Match{Body: []byte("plain")}, "now"},
		{"body differs", Match{Body: []byte("plain ")}, ""},
		{"json, other order and spacing", Match{JSON: map[string]any{"kind": "welcome", "user": 42}}, "welcome"},
		{"json from a struct", Match{JSON: struct {
			User int    `json:"user"`
			Kind string `json:"kind"`
		}{42, "welcome"}}, "welcome"},
		{"json differs", Match{JSON: map[string]any{"user": 43, "kind": "welcome"}}, ""},
		{"json of a body that is not json", Match{ID: "now", JSON: "plain"}, ""},
		{"priority", Match{Priority: 5}, "welcome"},
		{"priority differs", Match{Priority: 4}, ""},
		{"delay", Match{Delay: time.Hour}, "welcome"},
		{"delay differs", Match{Delay: time.Hour - time.Millisecond}, ""},
		{"run_at window", Match{RunAtFrom: welcome.RunAt, RunAtTo: welcome.RunAt}, "welcome"},
		{"run_at before the window", Match{ID: "welcome", RunAtFrom: welcome.RunAt.Add(time.Millisecond)}, ""},
		{"run_at after the window", Match{ID: "welcome", RunAtTo: welcome.RunAt.Add(-time.Millisecond)}, ""},
		{"callback", Match{CallbackURL: "https://example.com/hook"}, "now"},
		{"attempts", Match{Attempts: 1}, ""},
		{"a header, name in another case", Match{Headers: map[string]string{"Tenant": "acme"}}, "now"},
		{"a header's value differs", Match{Headers: map[string]string{"tenant": "other"}}, ""},
		{"a header missing", Match{Headers: map[string]string{"tenant": "acme", "region": "eu"}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got *delayq.Job
			msg := failures(t, func(tb testing.TB) { got = RequireEnqueued(tb, c, "mail", tc.m) })
			switch {
			case tc.wantID == "" && msg == "":
				t.Fatalf("RequireEnqueued(%s) passed with %q; want a failure", tc.m, got.ID)
			case tc.wantID != "" && msg != "":
				t.Fatalf("RequireEnqueued(%s) failed: %s", tc.m, msg)
			case tc.wantID != "" && got.ID != tc.wantID:
				t.Fatalf("RequireEnqueued(%s) = %q, want %q", tc.m, got.ID, tc.wantID)
			}
			notMsg := failures(t, func(tb testing.TB) { RequireNotEnqueued(tb, c, "mail", tc.m) })
			if (notMsg == "") != (tc.wantID == "") {
				t.Fatalf("RequireNotEnqueued(%s) failures %q; want one only when a job matches", tc.m, notMsg)
			}
		})
	}
}

func TestRequireEnqueuedFailureListsTheJobs(t *testing.T) {
	t.Parallel()
	c := NewClient(t, delayq.Config{})
	long := strings.Repeat("x", 500)
	enqueue(t, c, "orders", delayq.Spec{ID: "order-1", Body: []byte(long), Delay: time.Minute})
	enqueue(t, c, "orders", delayq.Spec{ID: "order-2", Body: []byte(`{"order":2}`)})

	msg := failures(t, func(tb testing.TB) { RequireEnqueued(tb, c, "orders", Match{ID: "order-3", Priority: 7}) })
	for _, want := range []string{
		`topic "orders" holds no job matching {ID: "order-3", Priority: 7}`,
		"2 jobs:",
		`"order-1" delayed`, "delay=1m0s", `"xxxxxxxxxx`, "…(500 bytes)",
		`"order-2" ready`, `body="{\"order\":2}"`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, long) {
		t.Errorf("failure message holds the whole 500-byte body:\n%s", msg)
	}

	msg = failures(t, func(tb testing.TB) { RequireEnqueued(tb, c, "nobody", Match{}) })
	if !strings.Contains(msg, `topic "nobody" holds no job matching {}; it holds no jobs`) {
		t.Errorf("failure message for an empty topic: %s", msg)
	}
	msg = failures(t, func(tb testing.TB) { RequireNotEnqueued(tb, c, "orders", Match{State: delayq.StateReady}) })
	if !strings.Contains(msg, `topic "orders" holds 1 job:`) || !strings.Contains(msg, `"order-2" ready`) || strings.Contains(msg, "order-1") {
		t.Errorf("RequireNotEnqueued failure message should list order-2 only: %s", msg)
	}
}

func TestEnqueuedListsEveryStateOverPages(t *testing.T) {
	t.Parallel()
	// A page of 2 jobs: listing 7 jobs takes several pages of each state.
	c := NewClient(t, delayq.Config{Limits: delayq.Limits{MaxReserve: 2}})
	ctx := testContext(t)
	for _, id := range []string{"d1", "d2", "d3"} {
		enqueue(t, c, "t", delayq.Spec{ID: id, Delay: time.Hour})
	}
	for _, id := range []string{"r1", "r2", "r3", "x"} {
		enqueue(t, c, "t", delayq.Spec{ID: id, NoRetries: true})
	}
	jobs, err := c.Reserve(ctx, "t", delayq.ReserveOptions{Max: 2})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("Reserve: %d jobs, %v", len(jobs), err)
	}
	if _, err := c.Nack(ctx, jobs[0].Lease(), delayq.NackOptions{Error: "boom"}); err != nil {
		t.Fatalf("Nack: %v", err)
	}
	got := map[delayq.State][]string{}
	for _, j := range Enqueued(t, c, "t") {
		got[j.State] = append(got[j.State], j.ID)
	}
	want := map[delayq.State]int{delayq.StateDelayed: 3, delayq.StateReady: 2, delayq.StateReserved: 1, delayq.StateDead: 1}
	for state, n := range want {
		if len(got[state]) != n {
			t.Errorf("%s jobs %v, want %d of them", state, got[state], n)
		}
	}
	if d := got[delayq.StateDelayed]; len(d) == 3 && (d[0] != "d1" || d[2] != "d3") {
		t.Errorf("delayed jobs %v, want them by due time", d)
	}
}
