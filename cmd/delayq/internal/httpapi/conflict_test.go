package httpapi

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
	"github.com/delayq/delayq/delayqtest"
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
	if r := batch.Results; len(r) != 2 || r[0].Job == nil || string(r[0].Job.Body) != "1" || !r[0].Job.Existed ||
		r[1].Job == nil || string(r[1].Job.Body) != "3" || r[1].Job.Replaces != 1 || !r[1].Job.Existed {
		t.Errorf("a batch that keeps then replaces answered %+v", r)
	}
}

func TestUniqueForAnswersAlreadyDoneUntilItPasses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, end := range []string{"acked", "cancelled", "dead"} {
		path := "/v1/topics/orders/jobs/" + end
		e.enqueue("orders", map[string]any{"id": end, "body": 1, "unique_for_ms": 60000})
		switch end {
		case "acked":
			j := e.reserveOne("orders", nil)
			e.call("POST", path+"/ack", map[string]string{"lease": j.Lease}).want(t, http.StatusNoContent)
		case "cancelled":
			e.call("DELETE", path, nil).want(t, http.StatusNoContent)
		case "dead":
			j := e.reserveOne("orders", nil)
			e.call("POST", path+"/nack", map[string]any{"lease": j.Lease, "dead": true}).want(t, http.StatusNoContent)
			e.call("DELETE", "/v1/topics/orders/dead", map[string]any{"ids": []string{end}}).want(t, http.StatusOK)
		}
		other := map[string]any{"id": end, "body": 2, "unique_for_ms": 60000}
		got := e.call("POST", "/v1/topics/orders/jobs", other).wantError(t, http.StatusConflict, codeDone)
		if got.Outcome != end || got.EndedAt == nil {
			t.Errorf("%s: already_done says outcome %q, ended at %v", end, got.Outcome, got.EndedAt)
		}
		batch := decode[apiv1.BatchResponse](t, e.call("POST", "/v1/topics/orders/jobs/batch", map[string]any{"jobs": []any{other}}).want(t, http.StatusOK))
		if r := batch.Results[0]; r.Error == nil || r.Error.Code != codeDone || r.Error.Outcome != end {
			t.Errorf("%s: the batch item answered %+v, want already_done", end, r)
		}
		ended := decode[apiv1.EndedJob](t, e.call("GET", path, nil).want(t, http.StatusOK))
		if ended.State != apiv1.StateEnded || ended.Outcome != end || !ended.EndedAt.Equal(got.EndedAt.Time) {
			t.Errorf("%s: GET answered %+v, want the ended job", end, ended)
		}
	}
	delayqtest.AdvanceClock(e.client, time.Minute)
	for _, end := range []string{"acked", "cancelled", "dead"} {
		e.call("POST", "/v1/topics/orders/jobs", map[string]any{"id": end, "body": 2}).want(t, http.StatusCreated)
	}
}

func TestUniqueForTopicDefault(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	stats := decode[apiv1.TopicStats](t, e.call("PUT", "/v1/topics/orders/defaults", map[string]any{"unique_for_ms": 60000}).want(t, http.StatusOK))
	if stats.Defaults == nil || stats.Defaults.UniqueForMs == nil || *stats.Defaults.UniqueForMs != 60000 {
		t.Fatalf("the topic's stats show defaults %+v", stats.Defaults)
	}
	e.enqueue("orders", map[string]any{"id": "o-1", "body": 1})
	j := e.reserveOne("orders", nil)
	if j.UniqueForMs != 60000 {
		t.Errorf("the job took unique_for_ms %d, want the topic's 60000", j.UniqueForMs)
	}
	e.call("POST", "/v1/topics/orders/jobs/o-1/ack", map[string]string{"lease": j.Lease}).want(t, http.StatusNoContent)
	e.call("POST", "/v1/topics/orders/jobs", map[string]any{"id": "o-1", "body": 2}).wantError(t, http.StatusConflict, codeDone)

	// A job's own 0 opts out; clearing the defaults leaves none.
	e.enqueue("orders", map[string]any{"id": "o-2", "body": 1, "unique_for_ms": 0})
	j = e.reserveOne("orders", nil)
	e.call("POST", "/v1/topics/orders/jobs/o-2/ack", map[string]string{"lease": j.Lease}).want(t, http.StatusNoContent)
	e.call("POST", "/v1/topics/orders/jobs", map[string]any{"id": "o-2", "body": 2}).want(t, http.StatusCreated)
	stats = decode[apiv1.TopicStats](t, e.call("PUT", "/v1/topics/orders/defaults", map[string]any{}).want(t, http.StatusOK))
	if stats.Defaults != nil {
		t.Errorf("after {} the topic's defaults are %+v, want none", stats.Defaults)
	}
}

// Debounce over HTTP: 16 producers replace one job 10,000 times in all; one job remains, due
// when the replace applied last asked.
func TestOnConflictReplaceDebouncesOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const producers, calls = 16, 10000
	base := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	var mu sync.Mutex
	last, lastAt := -1, time.Time{}
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := p; k < calls; k += producers {
				at := base.Add(time.Duration((k*7919)%calls) * time.Millisecond)
				r := e.call("POST", "/v1/topics/s/jobs", map[string]any{
					"id": "session-42", "body": k, "run_at": at.Format(time.RFC3339Nano), "on_conflict": "replace",
				})
				if r.status != http.StatusOK && r.status != http.StatusCreated {
					t.Errorf("call %d: %d %s", k, r.status, r.body)
					return
				}
				j := decode[apiv1.Job](t, r)
				mu.Lock()
				if j.Replaces > last {
					last, lastAt = j.Replaces, at
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if last != calls-1 {
		t.Fatalf("the last replace answered %d replaces, want %d", last, calls-1)
	}
	j := e.get("s", "session-42")
	if !j.RunAt.Equal(lastAt) || j.Replaces != calls-1 {
		t.Errorf("the job is due %v after %d replaces, want %v after %d", j.RunAt, j.Replaces, lastAt, calls-1)
	}
	stats := decode[apiv1.TopicStats](t, e.call("GET", "/v1/topics/s", nil).want(t, http.StatusOK))
	if stats.Delayed != 1 || stats.Ready+stats.Reserved+stats.Dead != 0 {
		t.Errorf("the topic holds %+v, want one delayed job", stats)
	}
}
