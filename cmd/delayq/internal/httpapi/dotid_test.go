package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// TestDotSegmentIDsRefused checks that the ids "." and "..", which no URL can carry as a path
// segment (the router would clean /jobs/.. away and redirect), are refused when a job is
// created, so that no job exists that cannot be read back.
func TestDotSegmentIDsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	before := redisKeys(t, e)
	for _, id := range []string{".", "..", "/"} {
		body, err := json.Marshal(map[string]any{"id": id})
		if err != nil {
			t.Fatal(err)
		}
		got := e.badRequests().raw(e.url, "POST", "/v1/topics/t/jobs", "application/json", string(body)).wantError(t, http.StatusBadRequest, codeInvalid)
		if !strings.Contains(got.Message, "id") || !strings.Contains(got.Message, "HTTP") {
			t.Errorf("id %q: message %q does not say what is wrong with the id", id, got.Message)
		}
	}
	r := e.badRequests().raw(e.url, "POST", "/v1/topics/t/jobs/batch", "application/json", `{"jobs": [{"id": "."}, {"id": ".."}]}`).want(t, http.StatusOK)
	res := decode[struct {
		Results []struct {
			Job   *apiv1.Job   `json:"job"`
			Error *apiv1.Error `json:"error"`
		} `json:"results"`
	}](t, r).Results
	if len(res) != 2 {
		t.Fatalf("batch answered %d results, want 2: %s", len(res), r.body)
	}
	for i, it := range res {
		if it.Job != nil || it.Error == nil || it.Error.Code != codeInvalid {
			t.Errorf("batch item %d: job %v, error %v; want %s", i, it.Job, it.Error, codeInvalid)
		}
	}
	if diff := cmp.Diff(before, redisKeys(t, e)); diff != "" {
		t.Errorf("refused jobs changed Redis (-before +after):\n%s", diff)
	}

	// Ids with dots that are not whole segments are ordinary ids and round-trip.
	for _, id := range []string{"...", ".a", "a/.."} {
		e.enqueue("t", map[string]any{"id": id})
		if got := e.get("t", url.PathEscape(id)); got.ID != id {
			t.Errorf("GET of job %q answered job %q", id, got.ID)
		}
	}
}

// redisKeys returns every key in e's Redis, sorted.
func redisKeys(t *testing.T, e *env) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	keys, err := e.redis.Client(t).Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}
