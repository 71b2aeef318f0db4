package httpapi

import (
	"net/http"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/apiv1"
)

// Batch items are held to exact names and single keys too, each item on its own; a job's body
// is the producer's JSON, kept as given, whatever its keys.
func TestBatchItemKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.badRequests().raw(e.url, "POST", "/v1/topics/keys/jobs/batch", "application/json",
		`{"jobs": [{"Id": "a"}, {"id": "b", "id": "c"}, {"id": "d", "body": {"K": 1, "k": 2, "k": 3}}]}`)
	res := decode[struct {
		Results []struct {
			Job   *apiv1.Job   `json:"job"`
			Error *apiv1.Error `json:"error"`
		} `json:"results"`
	}](t, r.want(t, http.StatusOK)).Results
	if len(res) != 3 {
		t.Fatalf("%d results", len(res))
	}
	for i, want := range []string{"exact", "twice"} {
		if res[i].Error == nil || res[i].Error.Code != codeInvalid || !strings.Contains(res[i].Error.Message, want) {
			t.Errorf("item %d: %+v, want invalid_argument mentioning %q", i, res[i].Error, want)
		}
	}
	if res[2].Job == nil || string(res[2].Job.Body) != `{"K":1,"k":2,"k":3}` {
		t.Errorf("item 2: %+v, want the body kept as given", res[2])
	}
}

// Malformed JSON inside an array ends the key check, which leaves it to the decoder: the check
// once went on asking for the bad token forever.
func TestCheckKeysStopsAtMalformedJSON(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{"backoff_ms":[1 2]}`, `{"backoff_ms":[1,tru]}`, `{"body":[1 2]}`,
		`{"headers":[{"x":1 "y"}]}`, `{"body":[{"a":[1}]}`} {
		done := make(chan error, 1)
		go func() {
			var q apiv1.EnqueueRequest
			done <- decodeStrict([]byte(body), &q)
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "malformed JSON") {
				t.Errorf("%s: %v, want malformed JSON", body, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the key check does not end", body)
		}
	}
}

// TestDeeplyNestedBodyIsRefusedOnASmallStack sends an enqueue whose body is a million opening
// brackets, within the request limit. The key check recursed once per level: it overflowed the
// goroutine's stack and killed the server, and scanning without a bound took half a gigabyte
// of stack. It must stop at encoding/json's depth limit, as the decoder does; the stack is
// capped here so that a scan that goes deeper crashes the test.
func TestDeeplyNestedBodyIsRefusedOnASmallStack(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Limits.MaxBody = 1 << 20 })
	defer debug.SetMaxStack(debug.SetMaxStack(64 << 20))
	body := `{"body":` + strings.Repeat("[", 1_000_000) + `]}`
	r := e.badRequests().raw(e.url, "POST", "/v1/topics/deep/jobs", "application/json", body)
	r.wantError(t, http.StatusBadRequest, codeInvalid)
	if !strings.Contains(string(r.body), "exceeded max depth") {
		t.Errorf("answer %s; want the decoder's depth error", r.body)
	}
}
