package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// The test servers' clients check every exchange against the served OpenAPI document, so that
// the document and the server cannot drift apart: every response must match it, and so must
// every request the server accepted (requests a test sends to be refused are not expected to).

var (
	contractOnce   sync.Once
	contractRouter routers.Router
	contractErr    error
)

func openAPIRouter() (routers.Router, error) {
	contractOnce.Do(func() {
		openapi3filter.RegisterBodyDecoder("text/html", func(r io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
			b, err := io.ReadAll(r)
			return string(b), err
		})
		doc, err := openapi3.NewLoader().LoadFromData(openAPIDoc)
		if err != nil {
			contractErr = err
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			contractErr = err
			return
		}
		contractRouter, contractErr = gorillamux.NewRouter(doc)
	})
	return contractRouter, contractErr
}

// contractTransport checks each exchange against the document and reports mismatches to t.
type contractTransport struct {
	t    testing.TB
	next http.RoundTripper
}

func withContract(t testing.TB, next http.RoundTripper) http.RoundTripper {
	t.Helper()
	if _, err := openAPIRouter(); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	return &contractTransport{t: t, next: next}
}

func (c *contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	if err != nil {
		return resp, nil // the test sees the broken body itself
	}
	c.check(req, reqBody, resp, respBody)
	return resp, nil
}

func (c *contractTransport) check(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) {
	router, _ := openAPIRouter()
	probe := req.Clone(context.Background())
	probe.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := router.FindRoute(probe)
	if err != nil {
		// A path or method the document does not have: the answer must say so.
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusUnauthorized {
			c.t.Errorf("contract: %s %s is not in openapi.json but answered %d", req.Method, req.URL.Path, resp.StatusCode)
		}
		return
	}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true}
	in := &openapi3filter.RequestValidationInput{Request: probe, PathParams: params, Route: route, Options: opts}
	// A batch is accepted as a whole and its items refused one by one.
	itemsRefused := route.Path == "/v1/topics/{topic}/jobs/batch" && bytes.Contains(respBody, []byte(`"error":`))
	if resp.StatusCode < 300 && !itemsRefused {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			c.t.Errorf("contract: the server accepted a request openapi.json refuses: %s %s %s: %v", req.Method, req.URL.Path, reqBody, err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(respBody)), Options: opts,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		c.t.Errorf("contract: %s %s answered %d, which openapi.json does not allow: %v\nbody: %.300s", req.Method, req.URL.Path, resp.StatusCode, err, respBody)
	}
}

// recordingTB keeps the errors reported to it.
type recordingTB struct {
	testing.TB
	errs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

type fixedAnswer struct {
	status int
	body   string
}

func (f fixedAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: f.status, Request: req, Body: io.NopCloser(strings.NewReader(f.body)),
		Header: http.Header{"Content-Type": {"application/json"}},
	}, nil
}

// The contract check catches an answer the document does not allow, and passes one it allows.
func TestContractCheckCatchesMismatches(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		answer   fixedAnswer
		method   string
		path     string
		body     string
		mismatch bool
	}{
		{"a field of the wrong type", fixedAnswer{200, `{"topics": "none"}`}, "GET", "/v1/topics", "", true},
		{"a status the route never answers", fixedAnswer{418, `{}`}, "GET", "/v1/topics", "", true},
		{"a request refused by the document but accepted", fixedAnswer{200, `{"jobs": []}`}, "POST", "/v1/topics/t/reserve", `{"max": 0}`, true},
		{"a conforming answer", fixedAnswer{200, `{"topics": []}`}, "GET", "/v1/topics", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &recordingTB{TB: t}
			client := &http.Client{Transport: withContract(t, c.answer)}
			rec2 := client.Transport.(*contractTransport)
			rec2.t = rec
			req, _ := http.NewRequest(c.method, "http://127.0.0.1:1"+c.path, strings.NewReader(c.body))
			if c.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := len(rec.errs) > 0; got != c.mismatch {
				t.Fatalf("mismatch reported: %v (%v), want %v", got, rec.errs, c.mismatch)
			}
		})
	}
}
