package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// FuzzEnqueueRequest sends arbitrary bytes as an enqueue body: the answer is never a 5xx, and
// a stored job returns the JSON body it was given.
func FuzzEnqueueRequest(f *testing.F) {
	e := newEnv(f, nil)
	for _, c := range badCases {
		if c.method == "POST" && strings.HasSuffix(c.path, "/jobs") && len(c.body) < 4096 {
			f.Add([]byte(c.body))
		}
	}
	for _, s := range []string{
		`{}`, `{"body": {"a": [1, "2", null]}, "delay_ms": 10, "priority": -3}`,
		`{"body_base64": "AAE=", "ttr_ms": 100, "max_retries": 0, "backoff_ms": [0, 1]}`,
		`{"run_at": "2020-01-01T00:00:00.000Z", "body": "\u00e9"}`, `{"body": 1e999}`, `{"body": "\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", "/v1/topics/fuzz/jobs", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		e.handler.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
		if rec.Code != http.StatusCreated {
			return
		}
		var sent struct {
			Body json.RawMessage `json:"body"`
		}
		var got apiv1.Job
		if err := json.Unmarshal(body, &sent); err != nil {
			t.Fatalf("accepted a body that does not decode: %q: %v", body, err)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatalf("response %s: %v", rec.Body, err)
		}
		if sent.Body != nil && !jsonEqual(sent.Body, got.Body) {
			t.Fatalf("sent body %s, got back %s", sent.Body, got.Body)
		}
	})
}

// jsonEqual reports whether a and b are the same JSON text up to insignificant white space.
func jsonEqual(a, b []byte) bool {
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}
