package apiclient_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/apiclient"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
	"github.com/delayq/delayq/cmd/delayq/internal/httpapi"
	"github.com/delayq/delayq/internal/redistest"
)

// newServer serves the real API on a real Redis and returns a client of it, with the first
// token if any.
func newServer(t *testing.T, tokens ...string) *apiclient.Client {
	c, _ := newServerURL(t, tokens...)
	return c
}

func newServerURL(t *testing.T, tokens ...string) (*apiclient.Client, string) {
	t.Helper()
	rdb := redistest.Standalone(t).Client(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dq, err := delayq.New(testContext(t), rdb, delayq.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dq.Close() })
	h, err := httpapi.New(httpapi.Config{Client: dq, Tokens: tokens, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := apiclient.New(apiclient.Config{BaseURL: srv.URL + "/", Token: first(tokens)})
	if err != nil {
		t.Fatal(err)
	}
	return c, srv.URL
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func TestProduce(t *testing.T) {
	t.Parallel()
	c := newServer(t)
	ctx := testContext(t)
	retries := 2
	runAt := time.Now().Add(time.Hour).Truncate(time.Millisecond).UTC()
	j, err := c.Enqueue(ctx, "orders", apiclient.JobRequest{
		ID: "a/b?c", Body: json.RawMessage(`{"x": [1, 2]}`), RunAt: runAt, TTR: 2 * time.Second,
		MaxRetries: &retries, Backoff: []time.Duration{time.Second, time.Minute}, Priority: 7,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &apiv1.Job{
		// The server returns the same JSON value; encoding/json compacts its white space.
		Topic: "orders", ID: "a/b?c", State: "delayed", Body: json.RawMessage(`{"x":[1,2]}`),
		RunAt: apiv1.Time{Time: runAt}, CreatedAt: j.CreatedAt, MaxRetries: 2, TTRMs: 2000,
		BackoffMs: []int64{1000, 60000}, Priority: 7,
	}
	if diff := cmp.Diff(want, j, cmp.Comparer(func(a, b apiv1.Time) bool { return a.Equal(b.Time) })); diff != "" {
		t.Errorf("Enqueue (-want +got):\n%s", diff)
	}
	got, err := c.Get(ctx, "orders", "a/b?c")
	if err != nil || got.ID != "a/b?c" || string(got.Body) != `{"x":[1,2]}` {
		t.Fatalf("Get = %+v, %v", got, err)
	}

	if _, err := c.Enqueue(ctx, "orders", apiclient.JobRequest{ID: "a/b?c"}); !isCode(err, "already_exists", 409) {
		t.Errorf("duplicate: err = %v, want already_exists", err)
	}
	bin, err := c.Enqueue(ctx, "orders", apiclient.JobRequest{Binary: []byte{0, 1, 2}, Delay: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := bin.Payload(); err != nil || string(p) != "\x00\x01\x02" || bin.ID == "" {
		t.Errorf("binary job: payload %q, %v, id %q", p, err, bin.ID)
	}

	moved, err := c.Reschedule(ctx, "orders", bin.ID, 0)
	if err != nil || moved.State != "ready" {
		t.Errorf("Reschedule = %+v, %v; want ready", moved, err)
	}
	at := time.Now().Add(2 * time.Hour).Truncate(time.Millisecond)
	moved, err = c.RescheduleAt(ctx, "orders", bin.ID, at)
	if err != nil || !moved.RunAt.Equal(at) {
		t.Errorf("RescheduleAt = %+v, %v; want run_at %v", moved, err, at)
	}

	res, err := c.EnqueueBatch(ctx, "orders", []apiclient.JobRequest{{ID: "b1"}, {ID: "b1"}, {ID: "b2", Priority: 5000}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[0].Job == nil || res[1].Error == nil || res[1].Error.Code != "already_exists" || res[2].Error == nil || res[2].Error.Code != "invalid_argument" {
		t.Errorf("EnqueueBatch = %s", show(res))
	}
	res, err = c.EnqueueBatchRaw(ctx, "orders", []json.RawMessage{json.RawMessage(`{"id":"r1","body":"text"}`), json.RawMessage(`{"nope":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Job == nil || string(res[0].Job.Body) != `"text"` || res[1].Error == nil {
		t.Errorf("EnqueueBatchRaw = %s", show(res))
	}

	if err := c.Cancel(ctx, "orders", "a/b?c"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "orders", "a/b?c"); !isCode(err, "not_found", 404) {
		t.Errorf("Get after Cancel: err = %v", err)
	}
	// A cancel sent again within the replay window answers as the first did; an id never seen
	// is not found.
	if err := c.Cancel(ctx, "orders", "a/b?c"); err != nil {
		t.Errorf("second Cancel: err = %v, want nil", err)
	}
	if err := c.Cancel(ctx, "orders", "never-enqueued"); !isCode(err, "not_found", 404) {
		t.Errorf("Cancel of an id never enqueued: err = %v", err)
	}

	s, err := c.Stats(ctx, "orders")
	if err != nil || s.Name != "orders" || s.Delayed != 1 || s.Ready != 2 || s.NextRunAt == nil {
		t.Errorf("Stats = %s, %v", show(s), err)
	}
	topics, err := c.Topics(ctx)
	if err != nil || len(topics) != 1 || topics[0].Name != "orders" {
		t.Errorf("Topics = %s, %v", show(topics), err)
	}
}

// An enqueue says whether it kept or replaced a job that existed; an id kept by an ended job is
// already_done, with how and when it ended, for an enqueue and for Get.
func TestConflictsAndEndedIDs(t *testing.T) {
	t.Parallel()
	c := newServer(t)
	ctx := testContext(t)
	hour := time.Hour
	e, err := c.EnqueueAnswer(ctx, "orders", apiclient.JobRequest{ID: "o-1", Body: json.RawMessage(`1`), Delay: time.Minute, UniqueFor: &hour})
	if err != nil || e.Existed || e.Job.UniqueForMs != hour.Milliseconds() {
		t.Fatalf("EnqueueAnswer = %s, %v; want a new job with unique_for_ms 3600000", show(e), err)
	}
	e, err = c.EnqueueAnswer(ctx, "orders", apiclient.JobRequest{ID: "o-1", Body: json.RawMessage(`2`), OnConflict: "keep"})
	if err != nil || !e.Existed || string(e.Job.Body) != "1" {
		t.Errorf("keep = %s, %v; want the job as it was, existed", show(e), err)
	}
	e, err = c.EnqueueAnswer(ctx, "orders", apiclient.JobRequest{ID: "o-1", Body: json.RawMessage(`3`), OnConflict: "replace", UniqueFor: &hour})
	if err != nil || !e.Existed || string(e.Job.Body) != "3" || e.Job.Replaces != 1 || e.Job.ReplacedAt == nil {
		t.Errorf("replace = %s, %v; want the job replaced, existed", show(e), err)
	}

	if err := c.Cancel(ctx, "orders", "o-1"); err != nil {
		t.Fatal(err)
	}
	_, err = c.Enqueue(ctx, "orders", apiclient.JobRequest{ID: "o-1", Body: json.RawMessage(`4`)})
	var ae *apiclient.Error
	if !errors.As(err, &ae) || ae.Code != "already_done" || ae.Status != 409 || ae.Outcome != "cancelled" || time.Since(ae.EndedAt) > time.Minute {
		t.Errorf("an enqueue of the ended id: %#v, want already_done, cancelled, ended just now", err)
	}
	_, err = c.Get(ctx, "orders", "o-1")
	var done *apiclient.DoneError
	if !errors.As(err, &done) || done.Job.Outcome != "cancelled" || done.Job.ID != "o-1" || done.Job.State != apiv1.StateEnded {
		t.Errorf("Get of the ended id: %v, want a DoneError saying cancelled", err)
	}
	if !strings.Contains(err.Error(), "cancelled at ") {
		t.Errorf("the DoneError says %q, want how and when the job ended", err)
	}

	// 0 keeps nothing once the job ends.
	zero := time.Duration(0)
	if _, err := c.Enqueue(ctx, "orders", apiclient.JobRequest{ID: "o-2", UniqueFor: &zero}); err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctx, "orders", "o-2"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "orders", "o-2"); !isCode(err, "not_found", 404) {
		t.Errorf("Get of an ended job without unique_for: %v, want not_found", err)
	}

	ms := int64(90000)
	s, err := c.SetTopicDefaults(ctx, "orders", apiv1.TopicDefaults{UniqueForMs: &ms})
	if err != nil || s.Defaults == nil || s.Defaults.UniqueForMs == nil || *s.Defaults.UniqueForMs != ms {
		t.Errorf("SetTopicDefaults = %s, %v", show(s), err)
	}
	if s, err := c.SetTopicDefaults(ctx, "orders", apiv1.TopicDefaults{}); err != nil || s.Defaults != nil {
		t.Errorf("SetTopicDefaults of none = %s, %v", show(s), err)
	}
}

func TestConsume(t *testing.T) {
	t.Parallel()
	c := newServer(t)
	ctx := testContext(t)
	zero := 0
	for _, id := range []string{"j1", "j2"} {
		if _, err := c.Enqueue(ctx, "mail", apiclient.JobRequest{ID: id, Body: json.RawMessage(`1`), MaxRetries: &zero}); err != nil {
			t.Fatal(err)
		}
	}
	if jobs, err := c.Reserve(ctx, "empty", apiclient.ReserveRequest{Wait: 50 * time.Millisecond}); err != nil || len(jobs) != 0 {
		t.Errorf("Reserve of an empty topic = %v, %v", jobs, err)
	}
	jobs, err := c.Reserve(ctx, "mail", apiclient.ReserveRequest{Max: 5, TTR: 10 * time.Second})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("Reserve = %s, %v", show(jobs), err)
	}
	for _, j := range jobs {
		if j.Lease == "" || j.LeaseDeadline == nil || j.Attempts != 1 || j.State != "reserved" {
			t.Errorf("reserved job %s", show(j))
		}
	}
	j1, j2 := jobs[0], jobs[1]
	if j1.ID != "j1" {
		j1, j2 = j2, j1
	}
	deadline, err := c.Touch(ctx, "mail", j1.ID, j1.Lease, time.Minute)
	if err != nil || time.Until(deadline) < 50*time.Second {
		t.Errorf("Touch = %v, %v", deadline, err)
	}
	if err := c.Ack(ctx, "mail", j1.ID, "made-up"); !isCode(err, "lease_lost", 409) {
		t.Errorf("Ack with a made-up lease: err = %v", err)
	}
	if err := c.Ack(ctx, "mail", j1.ID, j1.Lease); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, "mail", j2.ID, j2.Lease); err != nil {
		t.Fatal(err)
	}
	jobs, err = c.Reserve(ctx, "mail", apiclient.ReserveRequest{Wait: time.Second})
	if err != nil || len(jobs) != 1 || jobs[0].ID != "j2" {
		t.Fatalf("Reserve after Release = %s, %v", show(jobs), err)
	}
	if err := c.Nack(ctx, "mail", "j2", jobs[0].Lease, apiclient.NackRequest{Error: "boom"}); err != nil {
		t.Fatal(err)
	}

	page, err := c.DeadJobs(ctx, "mail", 10, "")
	if err != nil || len(page.Jobs) != 1 || page.Jobs[0].LastError != "boom" || page.NextCursor != "" {
		t.Fatalf("DeadJobs = %s, %v", show(page), err)
	}
	if n, err := c.RequeueDead(ctx, "mail", []string{"j2", "nope"}); err != nil || n != 1 {
		t.Errorf("RequeueDead = %d, %v", n, err)
	}
	jobs, err = c.Reserve(ctx, "mail", apiclient.ReserveRequest{})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Reserve after requeue = %s, %v", show(jobs), err)
	}
	delay := time.Duration(0)
	if err := c.Nack(ctx, "mail", "j2", jobs[0].Lease, apiclient.NackRequest{Dead: true, Delay: &delay}); err != nil {
		t.Fatal(err)
	}
	if n, err := c.RequeueAllDead(ctx, "mail"); err != nil || n != 1 {
		t.Errorf("RequeueAllDead = %d, %v", n, err)
	}
	jobs, err = c.Reserve(ctx, "mail", apiclient.ReserveRequest{})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Reserve = %s, %v", show(jobs), err)
	}
	if err := c.Nack(ctx, "mail", "j2", jobs[0].Lease, apiclient.NackRequest{Dead: true}); err != nil {
		t.Fatal(err)
	}
	if n, err := c.DeleteDead(ctx, "mail", []string{"j2"}); err != nil || n != 1 {
		t.Errorf("DeleteDead = %d, %v", n, err)
	}
	if n, err := c.DeleteAllDead(ctx, "mail"); err != nil || n != 0 {
		t.Errorf("DeleteAllDead = %d, %v", n, err)
	}
}

func TestHealthAndAuth(t *testing.T) {
	t.Parallel()
	c, url := newServerURL(t, "good-token")
	ctx := testContext(t)
	if err := c.Healthz(ctx); err != nil {
		t.Errorf("Healthz: %v", err)
	}
	if err := c.Readyz(ctx); err != nil {
		t.Errorf("Readyz: %v", err)
	}
	if _, err := c.Topics(ctx); err != nil {
		t.Errorf("Topics with the token: %v", err)
	}
	for _, tok := range []string{"", "bad-token"} {
		other, err := apiclient.New(apiclient.Config{BaseURL: url, Token: tok})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Topics(ctx); !isCode(err, "unauthenticated", 401) {
			t.Errorf("Topics with token %q: err = %v, want unauthenticated", tok, err)
		}
		if err := other.Healthz(ctx); err != nil {
			t.Errorf("Healthz with token %q: %v", tok, err)
		}
	}
}

func TestErrorWithoutBody(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		http.Error(w, "upstream went away", http.StatusBadGateway)
	}))
	t.Cleanup(srv.Close)
	ctx := testContext(t)
	c, err := apiclient.New(apiclient.Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Healthz(ctx); !isCode(err, "unauthenticated", 401) {
		t.Errorf("err = %v, want unauthenticated", err)
	}
	c, err = apiclient.New(apiclient.Config{BaseURL: srv.URL, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Healthz(ctx)
	if !isCode(err, "unavailable", 502) || !strings.Contains(err.Error(), "upstream went away") {
		t.Errorf("err = %v, want unavailable: upstream went away", err)
	}
}

func TestNewRejectsBadURLs(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "127.0.0.1:7070", "ftp://h", "http://", "http://h?x=1"} {
		if _, err := apiclient.New(apiclient.Config{BaseURL: u}); err == nil {
			t.Errorf("New(%q) succeeded", u)
		}
	}
	if _, err := apiclient.New(apiclient.Config{BaseURL: "http://h", Token: "a b"}); err == nil {
		t.Error("a token with a space was accepted")
	}
}

func TestJobRequestJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   apiclient.JobRequest
		want string
	}{
		{"empty", apiclient.JobRequest{}, `{}`},
		{"binary", apiclient.JobRequest{Binary: []byte("hi"), Delay: 1500 * time.Millisecond}, `{"body_base64":"aGk=","delay_ms":1500}`},
		{"empty binary", apiclient.JobRequest{Binary: []byte{}}, `{"body_base64":""}`},
		{"run_at", apiclient.JobRequest{RunAt: time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.FixedZone("x", 3600))}, `{"run_at":"2026-11-22T09:00:00.123Z"}`},
		{"retries", apiclient.JobRequest{MaxRetries: new(int), Backoff: []time.Duration{time.Second}}, `{"max_retries":0,"backoff_ms":[1000]}`},
		{"unique_for none", apiclient.JobRequest{ID: "a", UniqueFor: new(time.Duration)}, `{"id":"a","unique_for_ms":0}`},
		{"unique_for and on_conflict", apiclient.JobRequest{ID: "a", UniqueFor: new(time.Minute), OnConflict: "replace"}, `{"id":"a","unique_for_ms":60000,"on_conflict":"replace"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Marshal = %s, want %s", got, tt.want)
			}
		})
	}
}

func isCode(err error, code string, status int) bool {
	var e *apiclient.Error
	return errors.As(err, &e) && e.Code == code && e.Status == status
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSchedules(t *testing.T) {
	t.Parallel()
	c := newServer(t)
	ctx := testContext(t)
	start := time.Now().Add(time.Hour).Truncate(time.Second).UTC()
	req := apiclient.ScheduleRequest{
		Cron: "@every 1m", Topic: "reports", StartAt: start, Missed: "skip",
		Job: apiclient.JobRequest{Body: json.RawMessage(`{"r": 1}`), Priority: 3},
	}
	s, created, err := c.PutSchedule(ctx, "hourly", req)
	if err != nil || !created {
		t.Fatalf("PutSchedule: %+v, created %v, %v", s, created, err)
	}
	if s.Cron != "@every 1m" || s.Missed != "skip" || !s.StartAt.Equal(start) || !s.NextRuns[0].Equal(start) || *s.Job.Priority != 3 {
		t.Fatalf("PutSchedule answered %+v", s)
	}
	if _, created, err := c.PutSchedule(ctx, "hourly", req); err != nil || created {
		t.Fatalf("a second PutSchedule: created %v, %v", created, err)
	}
	if p, err := c.PauseSchedule(ctx, "hourly"); err != nil || !p.Paused {
		t.Fatalf("PauseSchedule: %+v, %v", p, err)
	}
	if r, err := c.ResumeSchedule(ctx, "hourly"); err != nil || r.Paused {
		t.Fatalf("ResumeSchedule: %+v, %v", r, err)
	}
	if list, err := c.Schedules(ctx); err != nil || len(list) != 1 || list[0].Name != "hourly" {
		t.Fatalf("Schedules: %+v, %v", list, err)
	}
	if err := c.DeleteSchedule(ctx, "hourly"); err != nil {
		t.Fatal(err)
	}
	var apiErr *apiclient.Error
	if _, err := c.Schedule(ctx, "hourly"); !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound {
		t.Fatalf("Schedule after delete: %v, want a 404", err)
	}
	req.Cron = "@every 500ms"
	if _, _, err := c.PutSchedule(ctx, "fast", req); !errors.As(err, &apiErr) || apiErr.Code != "invalid_argument" || !strings.Contains(apiErr.Message, "cron") {
		t.Fatalf("an interval under 1s: %v", err)
	}
}

// A client given RootCAs trusts an https:// server whose certificate they signed, and one
// without them does not.
func TestClientTrustsItsRootCAs(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	}))
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	ctx := testContext(t)
	c, err := apiclient.New(apiclient.Config{BaseURL: srv.URL, RootCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Healthz(ctx); err != nil {
		t.Errorf("Healthz with the server's CA: %v", err)
	}
	c, err = apiclient.New(apiclient.Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Healthz(ctx); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("Healthz without the server's CA: %v, want a certificate error", err)
	}
	if _, err := apiclient.New(apiclient.Config{BaseURL: srv.URL, RootCAs: pool, HTTPClient: srv.Client()}); err == nil {
		t.Error("RootCAs with an HTTPClient of the caller's was accepted")
	}
}
