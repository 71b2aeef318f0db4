package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// A job's headers come back, names in lower case, from the enqueue, a get, a reserve, the dead
// letters and after a requeue.
func TestHeadersOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	want := map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "x-tenant": "acme\tcorp"}
	check := func(step string, got map[string]string) {
		t.Helper()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s: headers (-want +got):\n%s", step, diff)
		}
	}
	j := e.enqueue("hdr", map[string]any{"id": "h", "headers": map[string]string{
		"TraceParent": want["traceparent"], "X-Tenant": want["x-tenant"]}})
	check("enqueue", j.Headers)
	// The same job again, its names spelled otherwise, is the same job: it answers as the first.
	again := e.enqueue("hdr", map[string]any{"id": "h", "headers": map[string]string{
		"x-tenant": want["x-tenant"], "TRACEPARENT": want["traceparent"]}})
	if diff := cmp.Diff(j, again); diff != "" {
		t.Fatalf("the enqueue repeated (-first +again):\n%s", diff)
	}
	e.call("POST", "/v1/topics/hdr/jobs", map[string]any{"id": "h", "headers": map[string]string{"x-tenant": "other"}}).
		wantError(t, http.StatusConflict, codeExists)
	check("get", e.get("hdr", "h").Headers)
	got := e.reserveOne("hdr", map[string]any{"wait_ms": 0})
	check("reserve", got.Headers)
	e.call("POST", "/v1/topics/hdr/jobs/h/nack", map[string]any{"lease": got.Lease, "dead": true}).want(t, http.StatusNoContent)
	dead := decode[struct {
		Jobs []apiv1.Job `json:"jobs"`
	}](t, e.call("GET", "/v1/topics/hdr/dead", nil).want(t, http.StatusOK))
	if len(dead.Jobs) != 1 {
		t.Fatalf("%d dead jobs, want 1", len(dead.Jobs))
	}
	check("dead", dead.Jobs[0].Headers)
	e.call("POST", "/v1/topics/hdr/dead/requeue", map[string]any{"ids": []string{"h"}}).want(t, http.StatusOK)
	check("requeue", e.get("hdr", "h").Headers)

	if plain := e.enqueue("hdr", map[string]any{"id": "plain"}); plain.Headers != nil {
		t.Fatalf("a job without headers has %v", plain.Headers)
	}
	if r := e.call("GET", "/v1/topics/hdr/jobs/plain", nil).want(t, http.StatusOK); strings.Contains(string(r.body), "headers") {
		t.Fatalf("a job without headers is written with them: %s", r.body)
	}
}

func TestBadHeadersOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil).badRequests()
	for _, tc := range []struct {
		headers string
		field   string
	}{
		{`{"a b": "1"}`, "headers[a b]"},
		{`{"X-A": "1", "x-a": "2"}`, "headers[x-a]"},
		{`{"a": "x\ny"}`, "headers[a]"},
		{`{"a": "` + strings.Repeat("v", 8192) + `"}`, "headers"},
		{`{"a": 1}`, ""},
	} {
		r := e.raw(e.url, "POST", "/v1/topics/hdr/jobs", "application/json", `{"headers": `+tc.headers+`}`)
		got := r.wantError(t, http.StatusBadRequest, codeInvalid)
		if !strings.HasPrefix(got.Message, "invalid "+tc.field+":") && tc.field != "" {
			t.Errorf("headers %.40s: %q, want it to name %s", tc.headers, got.Message, tc.field)
		}
	}
	r := e.raw(e.url, "POST", "/v1/topics/hdr/jobs/batch", "application/json",
		`{"jobs": [{"id": "ok", "headers": {"A": "1"}}, {"headers": {"a:b": "1"}}]}`).want(t, http.StatusOK)
	res := decode[apiv1.BatchResponse](t, r).Results
	if len(res) != 2 || res[0].Job == nil || !cmp.Equal(map[string]string{"a": "1"}, res[0].Job.Headers) ||
		res[1].Error == nil || !strings.HasPrefix(res[1].Error.Message, "invalid headers[a:b]:") {
		t.Fatalf("batch results: %s", r.body)
	}
}

func TestScheduleHeadersOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.call("PUT", "/v1/schedules/traced", map[string]any{"cron": "@hourly", "topic": "t",
		"job": map[string]any{"headers": map[string]string{"TraceState": "a=1"}}}).want(t, http.StatusCreated)
	s := decode[apiv1.Schedule](t, r)
	if diff := cmp.Diff(map[string]string{"tracestate": "a=1"}, s.Job.Headers); diff != "" {
		t.Fatalf("the schedule's job headers (-want +got):\n%s", diff)
	}
}
