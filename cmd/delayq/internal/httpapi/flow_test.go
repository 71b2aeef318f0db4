package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
	"github.com/delayq/delayq/internal/testwait"
)

func TestEnqueueGetReserveAck(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	body := `{"b": [1, 2.50, "x<y>&\u00e9"], "n": null, "s": "a\"b"}`
	created := e.raw(e.url, "POST", "/v1/topics/orders/jobs", "application/json; charset=utf-8",
		`{"id": "o-1", "body": `+body+`, "ttr_ms": 5000, "max_retries": 2, "priority": 7, "backoff_ms": [0, 10]}`)
	created.want(t, http.StatusCreated)
	j := decode[apiv1.Job](t, created)
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(body)); err != nil {
		t.Fatal(err)
	}
	want := apiv1.Job{
		Topic: "orders", ID: "o-1", State: "ready", Body: compact.Bytes(),
		RunAt: j.RunAt, CreatedAt: j.CreatedAt,
		MaxRetries: 2, TTRMs: 5000, BackoffMs: []int64{0, 10}, Priority: 7,
	}
	if diff := cmp.Diff(want, j); diff != "" {
		t.Fatalf("created job (-want +got):\n%s", diff)
	}
	created0, runAt := j.CreatedAt.Time, j.RunAt.Time
	if !runAt.Equal(created0) || time.Since(created0).Abs() > time.Minute {
		t.Fatalf("created_at %s, run_at %s: want both now", j.CreatedAt, j.RunAt)
	}
	if diff := cmp.Diff(j, e.get("orders", "o-1")); diff != "" {
		t.Fatalf("GET differs from the enqueue reply (-enqueue +get):\n%s", diff)
	}

	got := e.reserveOne("orders", map[string]any{"max": 10, "wait_ms": 0})
	if got.ID != "o-1" || got.State != "reserved" || got.Attempts != 1 || got.Lease == "" || string(got.Body) != compact.String() {
		t.Fatalf("reserved %+v", got)
	}
	deadline := got.LeaseDeadline.Time
	if d := time.Until(deadline); d < 3*time.Second || d > 6*time.Second {
		t.Fatalf("lease deadline %v from now, want about the 5s TTR", d)
	}
	if g := e.get("orders", "o-1"); g.State != "reserved" || g.Lease != "" || g.LeaseDeadline == nil || !g.LeaseDeadline.Equal(deadline) {
		t.Fatalf("GET of a reserved job: %+v", g)
	}
	e.call("POST", "/v1/topics/orders/jobs/o-1/ack", map[string]string{"lease": got.Lease}).want(t, http.StatusNoContent)
	e.call("GET", "/v1/topics/orders/jobs/o-1", nil).wantError(t, http.StatusNotFound, codeNotFound)
	// Retrying is always safe: the same ack again answers as the first did.
	e.call("POST", "/v1/topics/orders/jobs/o-1/ack", map[string]string{"lease": got.Lease}).want(t, http.StatusNoContent)
	if jobs := e.reserve("orders", nil); len(jobs) != 0 {
		t.Fatalf("reserve after ack got %d jobs", len(jobs))
	}
}

// TestEnqueueRetried checks the contract's "retrying is always safe" for an enqueue: the same request
// again answers 201 with the same job and stores nothing twice; another job with the id is 409.
func TestEnqueueRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	req := `{"id": "o-1", "body": {"n": 1}, "delay_ms": 60000, "priority": 2}`
	first := e.raw(e.url, "POST", "/v1/topics/orders/jobs", "application/json", req).want(t, http.StatusCreated)
	again := e.raw(e.url, "POST", "/v1/topics/orders/jobs", "application/json", req).want(t, http.StatusCreated)
	if string(first.body) != string(again.body) {
		t.Errorf("the same enqueue again answered\n%s\nafter\n%s", again.body, first.body)
	}
	e.call("POST", "/v1/topics/orders/jobs", map[string]any{"id": "o-1", "body": map[string]int{"n": 2}, "delay_ms": 60000}).
		wantError(t, http.StatusConflict, codeExists)
	if st := decode[apiv1.TopicStats](t, e.call("GET", "/v1/topics/orders", nil).want(t, http.StatusOK)); st.Delayed != 1 {
		t.Errorf("%d jobs delayed, want 1", st.Delayed)
	}
}

func TestBodies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	str := func(s string) *string { return &s }
	for _, c := range []struct {
		name    string
		req     string
		body    string
		base64_ *string
	}{
		{"object", `{"body": {"a": {"b": []}}}`, `{"a":{"b":[]}}`, nil},
		{"string", `{"body": "<html>"}`, `"<html>"`, nil},
		{"number kept as written", `{"body": 1.50e3}`, `1.50e3`, nil},
		{"big number", `{"body": 123456789012345678901234567890}`, `123456789012345678901234567890`, nil},
		{"null", `{"body": null}`, `null`, nil},
		{"false", `{"body": false}`, `false`, nil},
		{"base64", `{"body_base64": "AP8A"}`, ``, str("AP8A")},
		{"none", `{}`, ``, nil}, // neither body nor body_base64
	} {
		t.Run(c.name, func(t *testing.T) {
			j := decode[apiv1.Job](t, e.raw(e.url, "POST", "/v1/topics/bodies/jobs", "application/json", c.req).want(t, http.StatusCreated))
			for _, got := range []apiv1.Job{j, e.get("bodies", j.ID)} {
				if string(got.Body) != c.body {
					t.Errorf("body %s, want %s", got.Body, c.body)
				}
				if diff := cmp.Diff(c.base64_, got.BodyBase64); diff != "" {
					t.Errorf("body_base64 (-want +got):\n%s", diff)
				}
			}
		})
	}
	raw := e.raw(e.url, "GET", "/v1/topics/bodies", "", "")
	if st := decode[apiv1.TopicStats](t, raw); st.Ready != 8 {
		t.Fatalf("topic has %d ready jobs, want 8", st.Ready)
	}
	// The binary body is the decoded bytes.
	j := e.enqueue("bodies", map[string]any{"id": "bin", "body_base64": base64.StdEncoding.EncodeToString([]byte{0, 1, 2})})
	if *j.BodyBase64 != "AAEC" {
		t.Fatalf("body_base64 %q", *j.BodyBase64)
	}
}

func TestIDsInPaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, id := range []string{"{braces}", "a/b", "q?x=1#frag", "100%", "ünï©ødé", "..x", "e\u0301"} {
		e.enqueue("ids", map[string]any{"id": id})
		got := e.get("ids", url.PathEscape(id))
		if got.ID != id {
			t.Fatalf("GET %q returned id %q", id, got.ID)
		}
		e.call("DELETE", "/v1/topics/ids/jobs/"+url.PathEscape(id), nil).want(t, http.StatusNoContent)
	}
	// A made id is time-ordered and unique.
	a, b := e.enqueue("ids", map[string]any{}), e.enqueue("ids", map[string]any{})
	if a.ID == "" || a.ID >= b.ID {
		t.Fatalf("made ids %q then %q", a.ID, b.ID)
	}
}

func TestDelayAndRunAt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	d := e.enqueue("d", map[string]any{"id": "later", "delay_ms": 3600000})
	if d.State != "delayed" {
		t.Fatalf("state %q", d.State)
	}
	if diff := d.RunAt.Sub(d.CreatedAt.Time); diff != time.Hour {
		t.Fatalf("run_at - created_at = %v", diff)
	}
	at := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Millisecond)
	r := e.enqueue("d", map[string]any{"id": "at", "run_at": at.Format(time.RFC3339Nano)})
	if !r.RunAt.Equal(at) || r.State != "delayed" {
		t.Fatalf("run_at %s state %s, want %s delayed", r.RunAt, r.State, at)
	}
	past := e.enqueue("d", map[string]any{"id": "past", "run_at": "2020-01-02T03:04:05.678+02:00"})
	if past.RunAt.String() != "2020-01-02T01:04:05.678Z" || past.State != "ready" {
		t.Fatalf("past job run_at %s state %s", past.RunAt, past.State)
	}
	st := decode[apiv1.TopicStats](t, e.call("GET", "/v1/topics/d", nil).want(t, http.StatusOK))
	if st.Delayed != 2 || st.Ready != 1 || st.NextRunAt == nil || !st.NextRunAt.Equal(past.RunAt.Time) {
		t.Fatalf("stats %+v", st)
	}
}

func TestReserveLongPoll(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	j := e.enqueue("lp", map[string]any{"delay_ms": 300, "priority": -3})
	start := time.Now()
	got := e.reserveOne("lp", map[string]any{"wait_ms": 10000, "ttr_ms": 100})
	took := time.Since(start)
	if got.ID != j.ID || took < 200*time.Millisecond || took > 5*time.Second {
		t.Fatalf("reserved %q after %v", got.ID, took)
	}
	if time.Now().Before(j.RunAt.Time) {
		t.Fatalf("delivered before its run_at %s", j.RunAt)
	}
	if got.TTRMs != 100 && time.Until(got.LeaseDeadline.Time) > time.Second {
		t.Fatalf("the ttr_ms override was not applied: %+v", got)
	}
	// An empty body takes the defaults, and an empty topic answers an empty array at once (a
	// topic that does not exist says so too: TestReserveTellsWhetherTheTopicExists).
	r := e.raw(e.url, "POST", "/v1/topics/lp/reserve", "", "").want(t, http.StatusOK)
	if string(bytes.TrimSpace(r.body)) != `{"jobs":[]}` {
		t.Fatalf("empty reserve: %s", r.body)
	}
}

func TestReserveOrderAndMax(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, j := range []map[string]any{
		{"id": "low", "priority": -5}, {"id": "high", "priority": 5}, {"id": "mid1"}, {"id": "mid2"},
	} {
		e.enqueue("o", j)
	}
	jobs := e.reserve("o", map[string]any{"max": 3})
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	if diff := cmp.Diff([]string{"high", "mid1", "mid2"}, ids); diff != "" {
		t.Fatalf("reserve order (-want +got):\n%s", diff)
	}
}

func TestNackTouchRelease(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.enqueue("n", map[string]any{"id": "j", "max_retries": 2, "backoff_ms": []int{60000}})

	// Nack with the backoff step.
	r1 := e.reserveOne("n", nil)
	e.call("POST", "/v1/topics/n/jobs/j/nack", map[string]any{"lease": r1.Lease, "error": "first"}).want(t, http.StatusNoContent)
	g := e.get("n", "j")
	if g.State != "delayed" || g.LastError != "first" || g.Attempts != 1 {
		t.Fatalf("after nack: %+v", g)
	}
	if d := time.Until(g.RunAt.Time); d < 50*time.Second || d > 61*time.Second {
		t.Fatalf("due %v from now, want the 60s backoff step", d)
	}
	// The stale lease is refused.
	e.call("POST", "/v1/topics/n/jobs/j/ack", map[string]any{"lease": r1.Lease}).wantError(t, http.StatusConflict, codeLeaseLost)

	// Reschedule the delayed job to now, then nack with an explicit delay of 0.
	e.call("PATCH", "/v1/topics/n/jobs/j", map[string]any{"delay_ms": 0}).want(t, http.StatusOK)
	r2 := e.reserveOne("n", nil)
	if r2.Attempts != 2 {
		t.Fatalf("attempts %d, want 2", r2.Attempts)
	}
	// Touch extends the lease.
	before := r2.LeaseDeadline.Time
	tr := decode[map[string]string](t, e.call("POST", "/v1/topics/n/jobs/j/touch", map[string]any{"lease": r2.Lease, "ttr_ms": 120000}).want(t, http.StatusOK))
	if after := parseTime(t, tr["lease_deadline"]); after.Sub(before) < time.Minute {
		t.Fatalf("touch moved the deadline from %v to %v", before, after)
	}
	if g := e.get("n", "j"); g.LeaseDeadline == nil || g.LeaseDeadline.String() != tr["lease_deadline"] {
		t.Fatalf("lease_deadline %s, touch said %s", g.LeaseDeadline, tr["lease_deadline"])
	}
	e.call("POST", "/v1/topics/n/jobs/j/nack", map[string]any{"lease": r2.Lease, "delay_ms": 0, "error": "second"}).want(t, http.StatusNoContent)

	// Release gives the lease back without counting the attempt.
	r3 := e.reserveOne("n", nil)
	e.call("POST", "/v1/topics/n/jobs/j/release", map[string]any{"lease": r3.Lease}).want(t, http.StatusNoContent)
	r4 := e.reserveOne("n", nil)
	if r4.Attempts != 3 {
		t.Fatalf("attempts %d after a release, want 3", r4.Attempts)
	}
	// Retries are used up: the third failure sends it to the dead letters.
	e.call("POST", "/v1/topics/n/jobs/j/nack", map[string]any{"lease": r4.Lease, "error": "third"}).want(t, http.StatusNoContent)
	if g := e.get("n", "j"); g.State != "dead" || g.LastError != "third" || g.DiedAt == nil {
		t.Fatalf("after the last retry: %+v", g)
	}

	// dead: true sends a job with retries left to the dead letters.
	e.enqueue("n", map[string]any{"id": "k"})
	rk := e.reserveOne("n", nil)
	e.call("POST", "/v1/topics/n/jobs/k/nack", map[string]any{"lease": rk.Lease, "dead": true}).want(t, http.StatusNoContent)
	if g := e.get("n", "k"); g.State != "dead" {
		t.Fatalf("after nack dead: %+v", g)
	}
}

// A release with delay_ms or run_at is a snooze: the job is due then, keeps its attempts and
// counts the snooze, which its JSON shows; past max_snoozes it goes dead and says why.
func TestReleaseWithADelaySnoozes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.enqueue("s", map[string]any{"id": "j", "max_snoozes": 1})
	r1 := e.reserveOne("s", nil)
	e.call("POST", "/v1/topics/s/jobs/j/release", map[string]any{"lease": r1.Lease, "delay_ms": 60000}).want(t, http.StatusNoContent)
	raw := decode[map[string]any](t, e.call("GET", "/v1/topics/s/jobs/j", nil).want(t, http.StatusOK))
	if raw["snoozes"] != 1.0 || raw["max_snoozes"] != 1.0 || raw["attempts"] != 0.0 || raw["state"] != "delayed" {
		t.Fatalf("after a release with delay_ms: %v; want delayed, 1 snooze of at most 1, 0 attempts", raw)
	}
	if d := time.Until(e.get("s", "j").RunAt.Time); d < 50*time.Second || d > 61*time.Second {
		t.Fatalf("due %v from now, want the 60 s asked for", d)
	}
	e.call("PATCH", "/v1/topics/s/jobs/j", map[string]any{"delay_ms": 0}).want(t, http.StatusOK)
	r2 := e.reserveOne("s", nil)
	if r2.Attempts != 1 || r2.Snoozes != 1 {
		t.Fatalf("back after the snooze: attempts %d, snoozes %d; want 1 and 1", r2.Attempts, r2.Snoozes)
	}
	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)
	e.call("POST", "/v1/topics/s/jobs/j/release", map[string]any{"lease": r2.Lease, "run_at": at}).want(t, http.StatusNoContent)
	if g := e.get("s", "j"); g.State != "dead" || g.Snoozes != 2 || g.LastError != "snoozed more than max_snoozes (1) times" {
		t.Fatalf("second snooze of at most 1: %+v; want dead, 2 snoozes, and why", g)
	}

	e.enqueue("s", map[string]any{"id": "k"})
	rk := e.reserveOne("s", nil)
	want := time.Now().Add(time.Hour).Truncate(time.Millisecond).UTC()
	e.call("POST", "/v1/topics/s/jobs/k/release", map[string]any{"lease": rk.Lease, "run_at": want.Format(time.RFC3339Nano)}).want(t, http.StatusNoContent)
	if g := e.get("s", "k"); g.State != "delayed" || g.Snoozes != 1 || g.Attempts != 0 || !g.RunAt.Time.Equal(want) {
		t.Fatalf("after a release with run_at %v: %+v; want delayed then, 1 snooze, 0 attempts", want, g)
	}
}

func TestExpiredLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.enqueue("x", map[string]any{"id": "j", "ttr_ms": 100, "backoff_ms": []int{0}})
	first := e.reserveOne("x", nil)
	// The second lease is long: the acks below must find it current however slow the machine.
	again := e.reserveOne("x", map[string]any{"wait_ms": 5000, "ttr_ms": 30000})
	if again.Attempts != 2 || again.LastError != "ttr exceeded" {
		t.Fatalf("redelivery %+v", again)
	}
	for _, op := range []string{"ack", "nack", "touch"} {
		e.call("POST", "/v1/topics/x/jobs/j/"+op, map[string]any{"lease": first.Lease}).wantError(t, http.StatusConflict, codeLeaseLost)
	}
	e.call("POST", "/v1/topics/x/jobs/j/ack", map[string]any{"lease": again.Lease}).want(t, http.StatusNoContent)
}

func TestCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.enqueue("c", map[string]any{"id": "r"})
	e.enqueue("c", map[string]any{"id": "d", "delay_ms": 60000})
	res := e.reserveOne("c", nil)
	for _, id := range []string{"r", "d"} {
		e.call("DELETE", "/v1/topics/c/jobs/"+id, nil).want(t, http.StatusNoContent)
		e.call("GET", "/v1/topics/c/jobs/"+id, nil).wantError(t, http.StatusNotFound, codeNotFound)
		// Retrying is safe: within the replay window the same cancel answers as the first did.
		e.call("DELETE", "/v1/topics/c/jobs/"+id, nil).want(t, http.StatusNoContent)
	}
	e.call("POST", "/v1/topics/c/jobs/r/ack", map[string]any{"lease": res.Lease}).wantError(t, http.StatusConflict, codeLeaseLost)
	e.call("DELETE", "/v1/topics/c/jobs/never", nil).wantError(t, http.StatusNotFound, codeNotFound)
}

// TestEnqueueRetriedAfterTheJobEnded checks that retrying is safe after the job ended too: the
// same enqueue within the replay window answers 201 with the first job and runs nothing again,
// whether the job was acked or cancelled; a cancel of an acked job says so (409).
func TestEnqueueRetriedAfterTheJobEnded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, end := range []string{"acked", "cancelled"} {
		req := `{"id": "` + end + `", "body": {"n": 1}, "priority": 2, "headers": {"x-tenant": "a"}}`
		first := e.raw(e.url, "POST", "/v1/topics/orders/jobs", "application/json", req).want(t, http.StatusCreated)
		if end == "acked" {
			got := e.reserveOne("orders", nil)
			e.call("POST", "/v1/topics/orders/jobs/"+end+"/ack", map[string]string{"lease": got.Lease}).want(t, http.StatusNoContent)
		} else {
			e.call("DELETE", "/v1/topics/orders/jobs/"+end, nil).want(t, http.StatusNoContent)
		}
		again := e.raw(e.url, "POST", "/v1/topics/orders/jobs", "application/json", req).want(t, http.StatusCreated)
		if string(first.body) != string(again.body) {
			t.Errorf("%s: the same enqueue again answered\n%s\nafter\n%s", end, again.body, first.body)
		}
		batch := decode[apiv1.BatchResponse](t, e.raw(e.url, "POST", "/v1/topics/orders/jobs/batch", "application/json", `{"jobs": [`+req+`]}`))
		if len(batch.Results) != 1 || batch.Results[0].Job == nil || !cmp.Equal(*batch.Results[0].Job, decode[apiv1.Job](t, first)) {
			t.Errorf("%s: the same job in a batch answered %+v, want the first job", end, batch.Results)
		}
		if jobs := e.reserve("orders", map[string]any{"max": 10, "wait_ms": 0}); len(jobs) != 0 {
			t.Errorf("%s: after the retries a reserve got %d jobs, want none: the job ran twice", end, len(jobs))
		}
		e.call("GET", "/v1/topics/orders/jobs/"+end, nil).wantError(t, http.StatusNotFound, codeNotFound)
	}
	e.call("DELETE", "/v1/topics/orders/jobs/cancelled", nil).want(t, http.StatusNoContent)
	if err := e.call("DELETE", "/v1/topics/orders/jobs/acked", nil).wantError(t, http.StatusConflict, codePrecondition); !strings.Contains(err.Message, "acked") {
		t.Errorf("a cancel of an acked job says %q, want it to say the job was acked", err.Message)
	}
}

func TestReschedule(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.enqueue("rs", map[string]any{"id": "delayed", "delay_ms": 60000})
	e.enqueue("rs", map[string]any{"id": "ready"})
	e.enqueue("rs", map[string]any{"id": "reserved", "priority": 9})
	e.reserveOne("rs", nil)

	got := decode[apiv1.Job](t, e.call("PATCH", "/v1/topics/rs/jobs/delayed", map[string]any{"delay_ms": 0}).want(t, http.StatusOK))
	if got.State != "ready" {
		t.Fatalf("delayed rescheduled to now: %+v", got)
	}
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	got = decode[apiv1.Job](t, e.call("PATCH", "/v1/topics/rs/jobs/ready", map[string]any{"run_at": at.Format(time.RFC3339Nano)}).want(t, http.StatusOK))
	if got.State != "delayed" || !got.RunAt.Equal(at) {
		t.Fatalf("ready rescheduled to %v: %+v", at, got)
	}
	e.call("PATCH", "/v1/topics/rs/jobs/reserved", map[string]any{"delay_ms": 10}).wantError(t, http.StatusConflict, codePrecondition)
}

func TestDeadLetters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const n = 7
	var want []string
	for i := range n {
		j := e.enqueue("dl", map[string]any{"max_retries": 0, "body": i})
		want = append(want, j.ID)
	}
	for _, j := range e.reserve("dl", map[string]any{"max": n}) {
		e.call("POST", "/v1/topics/dl/jobs/"+j.ID+"/nack", map[string]any{"lease": j.Lease, "error": "x"}).want(t, http.StatusNoContent)
	}
	type page struct {
		Jobs       []apiv1.Job `json:"jobs"`
		NextCursor *string     `json:"next_cursor"`
	}
	var got []string
	cursor, pages := "", 0
	for {
		p := decode[page](t, e.call("GET", "/v1/topics/dl/dead?limit=3&cursor="+url.QueryEscape(cursor), nil).want(t, http.StatusOK))
		pages++
		for _, j := range p.Jobs {
			if j.State != "dead" {
				t.Fatalf("dead list has a %s job", j.State)
			}
			got = append(got, j.ID)
		}
		if p.NextCursor == nil {
			break
		}
		if *p.NextCursor == "" || pages > n {
			t.Fatalf("next_cursor %q after %d pages", *p.NextCursor, pages)
		}
		cursor = *p.NextCursor
	}
	sort.Strings(want)
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("dead jobs over %d pages (-want +got):\n%s", pages, diff)
	}
	if pages < 3 {
		t.Fatalf("%d pages of up to 3 for %d jobs", pages, n)
	}
	// Without a limit: one page of at most 100, and no next_cursor.
	if r := e.call("GET", "/v1/topics/dl/dead", nil).want(t, http.StatusOK); bytes.Contains(r.body, []byte("next_cursor")) {
		t.Fatalf("last page has a next_cursor: %s", r.body)
	}

	count := func(r response, field string) int {
		t.Helper()
		return decode[map[string]int](t, r.want(t, http.StatusOK))[field]
	}
	if k := count(e.call("POST", "/v1/topics/dl/dead/requeue", map[string]any{"ids": []string{want[0], want[1], "not-dead"}}), "requeued"); k != 2 {
		t.Fatalf("requeued %d, want 2", k)
	}
	if g := e.get("dl", want[0]); g.State != "ready" || g.Attempts != 0 {
		t.Fatalf("requeued job %+v", g)
	}
	if k := count(e.call("DELETE", "/v1/topics/dl/dead", map[string]any{"ids": []string{want[2]}}), "deleted"); k != 1 {
		t.Fatalf("deleted %d, want 1", k)
	}
	e.call("GET", "/v1/topics/dl/jobs/"+want[2], nil).wantError(t, http.StatusNotFound, codeNotFound)
	// A null field counts as left out, a leniency the document does not promise.
	if k := count(e.badRequests().call("POST", "/v1/topics/dl/dead/requeue", map[string]any{"ids": []string{want[3]}, "all": nil}), "requeued"); k != 1 {
		t.Fatalf("requeued %d, want 1", k)
	}
	if k := count(e.call("POST", "/v1/topics/dl/dead/requeue", map[string]any{"all": true}), "requeued"); k != 3 {
		t.Fatalf("requeued all: %d, want 3", k)
	}
	for _, j := range e.reserve("dl", map[string]any{"max": 2}) {
		e.call("POST", "/v1/topics/dl/jobs/"+j.ID+"/nack", map[string]any{"lease": j.Lease, "dead": true}).want(t, http.StatusNoContent)
	}
	if k := count(e.call("DELETE", "/v1/topics/dl/dead", map[string]any{"all": true}), "deleted"); k != 2 {
		t.Fatalf("deleted all: %d, want 2", k)
	}
	st := decode[apiv1.TopicStats](t, e.call("GET", "/v1/topics/dl", nil).want(t, http.StatusOK))
	if st.Dead != 0 || st.Ready != 4 {
		t.Fatalf("stats after the dead-letter work: %+v", st)
	}
}

func TestTopics(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.call("GET", "/v1/topics", nil).want(t, http.StatusOK)
	if string(bytes.TrimSpace(r.body)) != `{"topics":[]}` {
		t.Fatalf("no topics: %s", r.body)
	}
	e.enqueue("beta", map[string]any{"delay_ms": 60000})
	e.enqueue("alpha", map[string]any{})
	e.enqueue("alpha", map[string]any{"priority": 1})
	e.reserveOne("alpha", nil)

	var list struct {
		Topics []apiv1.TopicStats `json:"topics"`
	}
	if err := json.Unmarshal(e.call("GET", "/v1/topics", nil).want(t, http.StatusOK).body, &list); err != nil {
		t.Fatal(err)
	}
	for i := range list.Topics {
		list.Topics[i].NextRunAt, list.Topics[i].OldestReadyMs = nil, 0
	}
	want := []apiv1.TopicStats{{Name: "alpha", Ready: 1, Reserved: 1, Partitions: 1}, {Name: "beta", Delayed: 1, Partitions: 1}}
	if diff := cmp.Diff(want, list.Topics); diff != "" {
		t.Fatalf("topics (-want +got):\n%s", diff)
	}

	// next_run_at is null when nothing is pending, and oldest_ready_ms 0 when nothing is ready.
	r = e.call("GET", "/v1/topics/beta", nil).want(t, http.StatusOK)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatal(err)
	}
	if string(raw["oldest_ready_ms"]) != "0" || string(raw["next_run_at"]) == "null" {
		t.Fatalf("beta: %s", r.body)
	}
	e.enqueue("gamma", map[string]any{"id": "only"})
	e.call("DELETE", "/v1/topics/gamma/jobs/only", nil).want(t, http.StatusNoContent)
	r = e.call("GET", "/v1/topics/gamma", nil).want(t, http.StatusOK)
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatal(err)
	}
	if string(raw["next_run_at"]) != "null" {
		t.Fatalf("empty topic: %s", r.body)
	}
	testwait.For(t, 5*time.Second, "oldest_ready_ms to grow", func() bool {
		return decode[apiv1.TopicStats](t, e.call("GET", "/v1/topics/alpha", nil).want(t, http.StatusOK)).OldestReadyMs > 0
	})
}

func TestCallbackAccepted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.raw(e.pushURL, "POST", "/v1/topics/push/jobs", "application/json", `{"id": "p", "callback_url": "https://example.com/hook"}`)
	j := decode[apiv1.Job](t, r.want(t, http.StatusCreated))
	if j.CallbackURL != "https://example.com/hook" {
		t.Fatalf("callback_url %q", j.CallbackURL)
	}
	// Pull consumers never see push jobs.
	if jobs := e.reserve("push", nil); len(jobs) != 0 {
		t.Fatalf("pull reserve got a push job")
	}
}
