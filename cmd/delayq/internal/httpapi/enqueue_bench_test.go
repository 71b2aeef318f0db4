package httpapi

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkEnqueueHandler measures the server's side of POST /v1/topics/{topic}/jobs with one
// job, without a network in between: decoding, validation, the enqueue on a real Redis and the
// answer. Its CPU profile (-cpuprofile) shows what a request costs besides Redis.
func BenchmarkEnqueueHandler(b *testing.B) {
	e := newEnv(b, nil)
	body := `{"body":"` + strings.Repeat("x", 98) + `","delay_ms":3600000}`
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		req := httptest.NewRequest("POST", "/v1/topics/bench/jobs", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		e.handler.ServeHTTP(w, req)
		if w.Code != 201 {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}
