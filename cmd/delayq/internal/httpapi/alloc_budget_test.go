//go:build !race

package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/delayq/delayq/internal/budget"
)

// TestAllocationsPerCall holds the allocations of POST /v1/topics/{topic}/jobs with one job,
// through the server's handler, to internal/budget; the requests and their recorders are made
// before counting. (Not under the race detector, which allocates for itself: make check-cost
// runs it.)
func TestAllocationsPerCall(t *testing.T) {
	b := budget.Allocations["http enqueue"]
	runs := b.Calls
	e := newEnv(t, nil)
	body := `{"body":"` + strings.Repeat("x", 98) + `","delay_ms":3600000}`
	reqs := make([]*http.Request, runs+1)
	recs := make([]*httptest.ResponseRecorder, runs+1)
	for i := range reqs {
		reqs[i] = httptest.NewRequest("POST", "/v1/topics/allocs/jobs", strings.NewReader(body))
		reqs[i].Header.Set("Content-Type", "application/json")
		recs[i] = httptest.NewRecorder()
	}
	next := 0
	got := budget.AllocsPerCall(runs, func() {
		e.handler.ServeHTTP(recs[next], reqs[next])
		next++
	})
	for _, w := range recs {
		if w.Code != http.StatusCreated {
			t.Fatalf("POST answered %d: %s", w.Code, w.Body)
		}
	}
	verdict, ok := b.Judge(got)
	if !ok {
		t.Fatalf("http enqueue: %.2f allocations per call: %s", got, verdict)
	}
	t.Logf("http enqueue: %.2f allocations per call: %s", got, verdict)
}
