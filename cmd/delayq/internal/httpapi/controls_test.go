package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// The topic controls over HTTP: pause and resume, limits, delete.
func TestTopicControls(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	topicOf := func(r response) apiv1.TopicStats { return decode[apiv1.TopicStats](t, r.want(t, http.StatusOK)) }
	e.enqueue("ctl", map[string]any{"id": "a"})
	e.enqueue("ctl", map[string]any{"id": "b"})

	// Pause: nothing is handed out, and the topic says so.
	if s := topicOf(e.call("POST", "/v1/topics/ctl/pause", nil)); !s.Paused || s.Partitions != 1 || s.Ready != 2 {
		t.Fatalf("pause answered %+v", s)
	}
	if jobs := e.reserve("ctl", map[string]any{"max": 10}); len(jobs) != 0 {
		t.Fatalf("a paused topic handed out %d jobs", len(jobs))
	}
	got := make(chan []apiv1.Job, 1)
	go func() { got <- e.reserve("ctl", map[string]any{"max": 1, "wait_ms": 20000}) }()
	start := time.Now()
	if s := topicOf(e.call("POST", "/v1/topics/ctl/resume", map[string]any{})); s.Paused {
		t.Fatalf("resume answered %+v", s)
	}
	if jobs := <-got; len(jobs) != 1 || time.Since(start) > 5*time.Second {
		t.Fatalf("after the resume the long poll got %d jobs after %v", len(jobs), time.Since(start))
	}

	// Limits: one delivery a minute, then lifted.
	limits := apiv1.TopicLimits{Rate: 1, PeriodMs: 60000, Concurrency: 5}
	if s := topicOf(e.call("PUT", "/v1/topics/ctl/limits", limits)); s.Limits != limits {
		t.Fatalf("limits answered %+v", s)
	}
	if jobs := e.reserve("ctl", map[string]any{"max": 10}); len(jobs) != 1 {
		t.Fatalf("under a limit of 1 a minute a reserve got %d jobs", len(jobs))
	}
	if jobs := e.reserve("ctl", map[string]any{"max": 10}); len(jobs) != 0 {
		t.Fatalf("over the limit a reserve got %d jobs", len(jobs))
	}
	if s := topicOf(e.call("GET", "/v1/topics/ctl", nil)); s.Limits != limits || s.Reserved != 2 {
		t.Fatalf("the topic: %+v", s)
	}
	if s := topicOf(e.call("DELETE", "/v1/topics/ctl/limits", nil)); s.Limits != (apiv1.TopicLimits{}) {
		t.Fatalf("lifting the limits answered %+v", s)
	}
	e.enqueue("ctl", map[string]any{"id": "c"})
	if jobs := e.reserve("ctl", map[string]any{"max": 10}); len(jobs) != 1 {
		t.Fatalf("without limits a reserve got %d jobs, want the last one", len(jobs))
	}
	if s := topicOf(e.call("PUT", "/v1/topics/ctl/limits", map[string]any{"concurrency": 3})); s.Limits != (apiv1.TopicLimits{Concurrency: 3}) {
		t.Fatalf("a concurrency limit alone answered %+v", s)
	}

	// Delete: refused while jobs remain, then purged.
	msg := e.call("DELETE", "/v1/topics/ctl", nil).wantError(t, http.StatusConflict, codePrecondition).Message
	if !strings.Contains(msg, "3 reserved") || !strings.Contains(msg, "purge=true") {
		t.Errorf("the refusal %q does not say what the topic holds and how to purge it", msg)
	}
	if d := decode[apiv1.DeleteResponse](t, e.call("DELETE", "/v1/topics/ctl?purge=true", nil).want(t, http.StatusOK)); d.Deleted != 3 {
		t.Fatalf("purge deleted %d jobs, want 3", d.Deleted)
	}
	e.call("GET", "/v1/topics/ctl", nil).wantError(t, http.StatusNotFound, codeNotFound)

	// An empty topic goes without purge; pausing creates one.
	topicOf(e.call("POST", "/v1/topics/early/pause", nil))
	if d := decode[apiv1.DeleteResponse](t, e.call("DELETE", "/v1/topics/early?purge=false", nil).want(t, http.StatusOK)); d.Deleted != 0 {
		t.Fatalf("deleting an empty topic: %+v", d)
	}
	if list := decode[apiv1.TopicList](t, e.call("GET", "/v1/topics", nil).want(t, http.StatusOK)); len(list.Topics) != 0 {
		t.Fatalf("topics left: %+v", list.Topics)
	}
}

// PUT /v1/topics/{topic}/defaults sets the unique_for_ms of the topic's jobs that give none,
// and the topic's stats show it until it is cleared.
func TestTopicDefaults(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	topicOf := func(r response) apiv1.TopicStats { return decode[apiv1.TopicStats](t, r.want(t, http.StatusOK)) }
	s := topicOf(e.call("PUT", "/v1/topics/d/defaults", map[string]any{"unique_for_ms": 90000}))
	if s.Defaults == nil || s.Defaults.UniqueForMs == nil || *s.Defaults.UniqueForMs != 90000 {
		t.Fatalf("PUT defaults answered %+v", s.Defaults)
	}
	e.enqueue("d", map[string]any{"id": "a"})
	if j := e.get("d", "a"); j.UniqueForMs != 90000 {
		t.Errorf("a job of the topic took unique_for_ms %d, want the topic's 90000", j.UniqueForMs)
	}
	if j := e.enqueue("d", map[string]any{"id": "b", "unique_for_ms": 1000}); j.UniqueForMs != 1000 {
		t.Errorf("a job that gives its own unique_for_ms got %d, want 1000", j.UniqueForMs)
	}
	s = topicOf(e.call("PUT", "/v1/topics/d/defaults", map[string]any{"unique_for_ms": 0}))
	if s.Defaults == nil || s.Defaults.UniqueForMs == nil || *s.Defaults.UniqueForMs != 0 {
		t.Fatalf("PUT defaults of 0 answered %+v", s.Defaults)
	}
	e.enqueue("d", map[string]any{"id": "c"})
	if j := e.get("d", "c"); j.UniqueForMs != 0 {
		t.Errorf("with a topic default of 0 a job took unique_for_ms %d", j.UniqueForMs)
	}
	if s := topicOf(e.call("PUT", "/v1/topics/d/defaults", map[string]any{"unique_for_ms": nil})); s.Defaults != nil {
		t.Errorf("clearing the defaults answered %+v", s.Defaults)
	}
	if s := topicOf(e.call("GET", "/v1/topics/d", nil)); s.Defaults != nil {
		t.Errorf("the topic after clearing its defaults: %+v", s.Defaults)
	}
}
