package httpapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// recordingTB keeps the errors reported to it.
type recordingTB struct {
	testing.TB
	errs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// fixedAnswer answers every request with the same response.
type fixedAnswer struct {
	status int
	body   string
	header []string // pairs of name and value; Content-Type is application/json unless given
}

func (f fixedAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	h := http.Header{"Content-Type": {"application/json"}}
	for i := 0; i+1 < len(f.header); i += 2 {
		h.Set(f.header[i], f.header[i+1])
	}
	return &http.Response{StatusCode: f.status, Request: req, Body: io.NopCloser(strings.NewReader(f.body)), Header: h}, nil
}

// TestContractCheckCatchesMismatches checks the contract check itself: it catches requests and
// answers the document does not allow, and passes those it allows.
func TestContractCheckCatchesMismatches(t *testing.T) {
	t.Parallel()
	job := `{"topic": "t", "id": "j", "state": "ready", "run_at": "2026-11-22T10:00:00.123Z",
		"created_at": "2026-11-22T10:00:00.000Z", "attempts": 0, "max_retries": 5, "ttr_ms": 30000,
		"backoff_ms": [1000], "priority": 0%s}`
	errBody := func(code string) string { return `{"error": {"code": "` + code + `", "message": "m"}}` }
	for _, c := range []struct {
		name         string
		answer       fixedAnswer
		method, path string
		body         string
		offContract  bool
		mismatch     string // a substring of the reported mismatch; "" for none
	}{
		{"a conforming answer", fixedAnswer{status: 200, body: `{"topics": []}`}, "GET", "/v1/topics", "", false, ""},
		{"a conforming job", fixedAnswer{status: 201, body: fmt.Sprintf(job, `, "body": {"k": null}`)}, "POST", "/v1/topics/t/jobs", `{"body": {"k": null}}`, false, ""},
		{"a field of the wrong type", fixedAnswer{status: 200, body: `{"topics": "none"}`}, "GET", "/v1/topics", "", false, "answer"},
		{"a field the document does not have", fixedAnswer{status: 200, body: `{"topics": [], "extra": 1}`}, "GET", "/v1/topics", "", false, "extra"},
		{"a job field the document does not have", fixedAnswer{status: 201, body: fmt.Sprintf(job, `, "shard": 3`)}, "POST", "/v1/topics/t/jobs", `{}`, false, "shard"},
		{"a job with both bodies", fixedAnswer{status: 201, body: fmt.Sprintf(job, `, "body": 1, "body_base64": "AQ=="`)}, "POST", "/v1/topics/t/jobs", `{}`, false, "answer"},
		{"a time not in milliseconds", fixedAnswer{status: 201, body: strings.Replace(fmt.Sprintf(job, ""), ".123Z", "Z", 1)}, "POST", "/v1/topics/t/jobs", `{}`, false, "answer"},
		{"a status the route never answers", fixedAnswer{status: 418, body: `{}`}, "GET", "/v1/topics", "", false, "status"},
		{"a 409 on a route that has none", fixedAnswer{status: 409, body: errBody("already_exists")}, "GET", "/v1/topics/t/jobs/j", "", false, "status"},
		{"an error code of another status", fixedAnswer{status: 404, body: errBody("internal")}, "GET", "/v1/topics/t/jobs/j", "", false, "internal"},
		{"an error without a message", fixedAnswer{status: 404, body: `{"error": {"code": "not_found"}}`}, "GET", "/v1/topics/t/jobs/j", "", false, "message"},
		{"a 401 without WWW-Authenticate", fixedAnswer{status: 401, body: errBody("unauthenticated")}, "GET", "/v1/topics", "", false, "WWW-Authenticate"},
		{"a request the document refuses", fixedAnswer{status: 200, body: `{"jobs": []}`}, "POST", "/v1/topics/t/reserve", `{"max": 0}`, false, "request"},
		{"a request refused on purpose", fixedAnswer{status: 400, body: errBody("invalid_argument")}, "POST", "/v1/topics/t/reserve", `{"max": 0}`, true, ""},
		{"the answer to a request refused on purpose", fixedAnswer{status: 400, body: errBody("invalid")}, "POST", "/v1/topics/t/reserve", `{"max": 0}`, true, "answer"},
		{"an unknown path answered", fixedAnswer{status: 200, body: `{}`}, "GET", "/v1/nothing", "", false, "want 404"},
		{"an unknown path answered 404", fixedAnswer{status: 404, body: errBody("not_found")}, "GET", "/v1/nothing", "", false, ""},
		{"a wrong method answered 405", fixedAnswer{status: 405, body: errBody("method_not_allowed"), header: []string{"Allow", "GET, HEAD"}}, "POST", "/v1/topics", "", false, ""},
		{"a 405 without Allow", fixedAnswer{status: 405, body: errBody("method_not_allowed")}, "POST", "/v1/topics", "", false, "Allow"},
		{"a 405 that allows what the document does not", fixedAnswer{status: 405, body: errBody("method_not_allowed"), header: []string{"Allow", "GET, POST"}}, "PUT", "/v1/topics", "", false, "Allow"},
		{"a 405 with another code", fixedAnswer{status: 405, body: errBody("not_found"), header: []string{"Allow", "GET"}}, "PUT", "/v1/topics", "", false, "code"},
		{"a wrong method answered 404", fixedAnswer{status: 404, body: errBody("not_found")}, "PUT", "/v1/topics", "", false, "want 405"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &recordingTB{TB: t}
			client := &http.Client{Transport: withContract(t, c.answer)}
			client.Transport.(*contractTransport).t = rec
			ctx := context.Background()
			if c.offContract {
				ctx = context.WithValue(ctx, offContractKey{}, true)
			}
			var body io.Reader
			if c.body != "" {
				body = strings.NewReader(c.body)
			}
			req, err := http.NewRequestWithContext(ctx, c.method, "http://127.0.0.1:1"+c.path, body)
			if err != nil {
				t.Fatal(err)
			}
			if c.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			switch {
			case c.mismatch == "" && len(rec.errs) > 0:
				t.Fatalf("mismatch reported: %v", rec.errs)
			case c.mismatch != "" && len(rec.errs) == 0:
				t.Fatalf("no mismatch reported, want one about %q", c.mismatch)
			case c.mismatch != "" && !strings.Contains(strings.Join(rec.errs, "\n"), c.mismatch):
				t.Fatalf("mismatch %v does not mention %q", rec.errs, c.mismatch)
			}
		})
	}
}

// TestTestClientsCheckTheContract checks that the test servers' clients go through the contract
// check, so that every test's exchanges are checked.
func TestTestClientsCheckTheContract(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	if _, ok := e.http.Transport.(*contractTransport); !ok {
		t.Fatalf("the test client's transport is %T, not the contract check", e.http.Transport)
	}
}
