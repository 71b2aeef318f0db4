package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// An id kept taken by unique_for_ms after its job ends: an enqueue of it is 409 already_done
// with the outcome and end time, and a GET of it the ended job. Every exchange is checked
// against the document.
func TestUniqueForKeepsEndedIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	j := e.enqueue("u", map[string]any{"id": "acked", "unique_for_ms": 60000})
	if j.UniqueForMs != 60000 {
		t.Fatalf("the job's unique_for_ms = %d, want 60000", j.UniqueForMs)
	}
	got := e.reserveOne("u", nil)
	e.call("POST", "/v1/topics/u/jobs/acked/ack", map[string]string{"lease": got.Lease}).want(t, http.StatusNoContent)
	e.enqueue("u", map[string]any{"id": "cancelled", "unique_for_ms": 60000, "delay_ms": 60000})
	e.call("DELETE", "/v1/topics/u/jobs/cancelled", nil).want(t, http.StatusNoContent)

	for _, outcome := range []string{"acked", "cancelled"} {
		// Another job with the id, whatever it asks on a conflict.
		for _, onConflict := range []string{"reject", "keep", "replace"} {
			req := map[string]any{"id": outcome, "body": "again", "on_conflict": onConflict}
			err := e.call("POST", "/v1/topics/u/jobs", req).wantError(t, http.StatusConflict, codeDone)
			if err.Outcome != outcome || err.EndedAt == nil || time.Since(err.EndedAt.Time) > time.Minute {
				t.Errorf("%s, on_conflict %s: the error says %+v, want outcome %s and a recent ended_at", outcome, onConflict, err, outcome)
			}
		}
		ended := decode[apiv1.EndedJob](t, e.call("GET", "/v1/topics/u/jobs/"+outcome, nil).want(t, http.StatusOK))
		if ended.State != apiv1.StateEnded || ended.Outcome != outcome || ended.ID != outcome || ended.Topic != "u" {
			t.Errorf("GET of the %s job: %+v", outcome, ended)
		}
	}
	batch := decode[apiv1.BatchResponse](t, e.call("POST", "/v1/topics/u/jobs/batch", map[string]any{"jobs": []any{
		map[string]any{"id": "acked"}, map[string]any{"id": "fresh", "unique_for_ms": 0},
	}}).want(t, http.StatusOK))
	if r := batch.Results; len(r) != 2 || r[0].Error == nil || r[0].Error.Code != codeDone || r[0].Error.Outcome != "acked" || r[1].Job == nil {
		t.Errorf("a batch of the ended id and a new one answered %+v", r)
	}

	// unique_for_ms 0 keeps nothing once the job ends.
	e.enqueue("u", map[string]any{"id": "none", "unique_for_ms": 0})
	e.call("DELETE", "/v1/topics/u/jobs/none", nil).want(t, http.StatusNoContent)
	e.call("GET", "/v1/topics/u/jobs/none", nil).wantError(t, http.StatusNotFound, codeNotFound)
}

// on_conflict keep answers the job as it is and replace a delayed or ready one replaced in
// place, both 200; a reserved job is not replaced.
func TestOnConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	first := e.enqueue("c", map[string]any{"id": "j", "body": "first", "delay_ms": 60000})

	kept := decode[apiv1.Job](t, e.call("POST", "/v1/topics/c/jobs", map[string]any{
		"id": "j", "body": "second", "on_conflict": "keep",
	}).want(t, http.StatusOK))
	if string(kept.Body) != `"first"` || kept.State != "delayed" || kept.Replaces != 0 || kept.ReplacedAt != nil {
		t.Errorf("keep answered %+v, want the first job as it is", kept)
	}
	e.call("POST", "/v1/topics/c/jobs", map[string]any{"id": "j", "body": "second"}).wantError(t, http.StatusConflict, codeExists)

	replaced := decode[apiv1.Job](t, e.call("POST", "/v1/topics/c/jobs", map[string]any{
		"id": "j", "body": "third", "priority": 3, "on_conflict": "replace",
	}).want(t, http.StatusOK))
	if string(replaced.Body) != `"third"` || replaced.State != "ready" || replaced.Priority != 3 || replaced.Replaces != 1 ||
		replaced.ReplacedAt == nil || !replaced.CreatedAt.Equal(first.CreatedAt.Time) {
		t.Errorf("replace answered %+v, want the third body, ready, one replace, the first created_at", replaced)
	}
	if g := e.get("c", "j"); g.Replaces != 1 || g.ReplacedAt == nil || !g.ReplacedAt.Equal(replaced.ReplacedAt.Time) {
		t.Errorf("GET after a replace: %+v", g)
	}

	res := e.reserveOne("c", nil)
	err := e.call("POST", "/v1/topics/c/jobs", map[string]any{"id": "j", "on_conflict": "replace"}).wantError(t, http.StatusConflict, codePrecondition)
	if !strings.Contains(err.Message, "reserved") {
		t.Errorf("a replace of a reserved job says %q, want it to say reserved", err.Message)
	}
	if kept := decode[apiv1.Job](t, e.call("POST", "/v1/topics/c/jobs", map[string]any{"id": "j", "on_conflict": "keep"}).want(t, http.StatusOK)); kept.State != "reserved" {
		t.Errorf("keep of a reserved job answered %+v", kept)
	}
	e.call("POST", "/v1/topics/c/jobs/j/ack", map[string]string{"lease": res.Lease}).want(t, http.StatusNoContent)

	// In a batch, kept and replaced jobs are job results.
	e.enqueue("c", map[string]any{"id": "k", "body": 1, "delay_ms": 60000})
	e.enqueue("c", map[string]any{"id": "r", "body": 1, "delay_ms": 60000})
	batch := decode[apiv1.BatchResponse](t, e.call("POST", "/v1/topics/c/jobs/batch", map[string]any{"jobs": []any{
		map[string]any{"id": "k", "body": 2, "on_conflict": "keep"},
		map[string]any{"id": "r", "body": 3, "on_conflict": "replace"},
	}}).want(t, http.StatusOK))
	if r := batch.Results; len(r) != 2 || r[0].Job == nil || string(r[0].Job.Body) != "1" || r[1].Job == nil || string(r[1].Job.Body) != "3" || r[1].Job.Replaces != 1 {
		t.Errorf("a batch that keeps then replaces answered %+v", r)
	}
}
