package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// A topic nobody produced to: its stats are 404 naming the topic, its dead-letter lists and
// operations are empty, and a job of it is 404 naming job and topic.
func TestUnknownTopic(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	body := e.call("GET", "/v1/topics/nosuch", nil).wantError(t, http.StatusNotFound, codeNotFound)
	if !strings.Contains(body.Message, `"nosuch"`) || strings.Contains(body.Message, "job") {
		t.Errorf("GET an unknown topic: message %q, want one naming the topic", body.Message)
	}
	dead := decode[struct {
		Jobs []apiv1.Job `json:"jobs"`
	}](t, e.call("GET", "/v1/topics/nosuch/dead", nil).want(t, http.StatusOK))
	if len(dead.Jobs) != 0 {
		t.Errorf("dead jobs of an unknown topic: %+v", dead.Jobs)
	}
	requeued := decode[map[string]int](t, e.call("POST", "/v1/topics/nosuch/dead/requeue", map[string]any{"all": true}).want(t, http.StatusOK))
	deleted := decode[map[string]int](t, e.call("DELETE", "/v1/topics/nosuch/dead", map[string]any{"ids": []string{"a"}}).want(t, http.StatusOK))
	if len(requeued) != 1 || len(deleted) != 1 || requeued["requeued"]+deleted["deleted"] != 0 {
		t.Errorf("dead operations on an unknown topic answered %v and %v, want 0 each", requeued, deleted)
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/topics/nosuch/jobs/j1"},
		{"DELETE", "/v1/topics/nosuch/jobs/j1"},
	} {
		body := e.call(c.method, c.path, nil).wantError(t, http.StatusNotFound, codeNotFound)
		if !strings.Contains(body.Message, `"j1"`) || !strings.Contains(body.Message, `"nosuch"`) {
			t.Errorf("%s %s: message %q, want one naming the job and the topic", c.method, c.path, body.Message)
		}
	}
}

// Every not_found of a job of a known topic names the job and the topic.
func TestNotFoundNamesTheJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.enqueue("known", map[string]any{"id": "here"})
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/topics/known/jobs/gone", nil},
		{"DELETE", "/v1/topics/known/jobs/gone", nil},
		{"PATCH", "/v1/topics/known/jobs/gone", map[string]any{"delay_ms": 10}},
	} {
		body := e.call(c.method, c.path, c.body).wantError(t, http.StatusNotFound, codeNotFound)
		if body.Message != `job "gone" not found in topic "known"` {
			t.Errorf("%s %s: message %q", c.method, c.path, body.Message)
		}
	}
}
