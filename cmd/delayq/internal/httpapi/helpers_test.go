package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
	"github.com/delayq/delayq/cmd/delayq/internal/metrics"
	"github.com/delayq/delayq/internal/redistest"
)

// testLimits are small enough that size limits are cheap to hit.
var testLimits = delayq.Limits{MaxBody: 1024}

// testBatchBytes is the batch request limit of the test servers.
const testBatchBytes = 200_000

// env is a delayq Client on a redis-server of its own, served twice: at url with push delivery
// disabled, and at pushURL with a callback check that refuses the host "forbidden.example".
type env struct {
	t       testing.TB
	redis   *redistest.Server
	client  *delayq.Client
	handler http.Handler
	url     string
	pushURL string
	http    *http.Client
	// offContract marks the requests as sent outside the OpenAPI document on purpose: the
	// contract check passes over them and still checks their answers (badRequests).
	offContract bool
}

// badRequests returns e for requests that a test sends outside the OpenAPI document on purpose,
// to see them refused: malformed JSON, unknown fields, values out of range, wrong content
// types, batches with bad items. The contract check does not hold their requests to the
// document; it holds their answers to it as always.
func (e *env) badRequests() *env {
	bad := *e
	bad.offContract = true
	return &bad
}

// newEnv starts an env; edit changes the Config of the url server. Its Redis client ends calls
// at their context's deadline, as delayq server's does.
func newEnv(t testing.TB, edit func(*Config)) *env {
	t.Helper()
	return newEnvOn(t, true, edit)
}

// newEnvOn is newEnv with a Redis client that ends calls at their context's deadline or not
// (go-redis's ContextTimeoutEnabled): the API bounds its store calls either way.
func newEnvOn(t testing.TB, deadlines bool, edit func(*Config)) *env {
	t.Helper()
	return newEnvWith(t, &redis.Options{ContextTimeoutEnabled: deadlines}, edit)
}

// newEnvWith is newEnv with a Redis client built from opts, whose Addr it sets.
func newEnvWith(t testing.TB, opts *redis.Options, edit func(*Config)) *env {
	t.Helper()
	srv := redistest.Standalone(t)
	opts.Addr = srv.Addr
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := delayq.New(ctx, rdb, delayq.Config{Limits: testLimits, Logger: logger})
	if err != nil {
		t.Fatalf("delayq.New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })

	reg := prometheus.NewRegistry()
	cfg := Config{
		Client:        c,
		Limits:        testLimits,
		MaxBatchBytes: testBatchBytes,
		Metrics:       metrics.New(reg),
		Registry:      reg,
		Redis:         rdb,
		Logger:        logger,
	}
	if edit != nil {
		edit(&cfg)
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	push := cfg
	push.Registry, push.Metrics, push.Tokens, push.Keyring = prometheus.NewRegistry(), nil, nil, nil
	push.CheckCallback = func(ctx context.Context, raw string) error {
		if strings.Contains(raw, "forbidden.example") {
			return errors.New("callback_url resolves to a private address")
		}
		return nil
	}
	ph, err := New(push)
	if err != nil {
		t.Fatalf("New (push): %v", err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	ps := httptest.NewServer(ph)
	t.Cleanup(ps.Close)
	client := hs.Client()
	client.Timeout = 30 * time.Second
	client.Transport = withContract(t, client.Transport)
	return &env{t: t, redis: srv, client: c, handler: h, url: hs.URL, pushURL: ps.URL, http: client}
}

// response is what a request got.
type response struct {
	status int
	header http.Header
	body   []byte
}

// raw sends a request to base+path with the given content type (none when empty) and body.
func (e *env) raw(base, method, path, ctype, body string, header ...string) response {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if e.offContract {
		ctx = context.WithValue(ctx, offContractKey{}, true)
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := e.http.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: reading the response: %v", method, path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

// call sends v (nil: no body) as JSON to the url server.
func (e *env) call(method, path string, v any) response {
	e.t.Helper()
	if v == nil {
		return e.raw(e.url, method, path, "", "")
	}
	data, err := json.Marshal(v)
	if err != nil {
		e.t.Fatalf("marshal: %v", err)
	}
	return e.raw(e.url, method, path, "application/json", string(data))
}

// want fails the test unless r has status; it returns r for chaining.
func (r response) want(t testing.TB, status int) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body: %s", r.status, status, r.body)
	}
	return r
}

// wantError fails the test unless r is an error body with status and code.
func (r response) wantError(t testing.TB, status int, code string) apiv1.Error {
	t.Helper()
	r.want(t, status)
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	var body struct {
		Error apiv1.Error `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("error body %s: %v", r.body, err)
	}
	if body.Error.Code != code || body.Error.Message == "" {
		t.Fatalf("error %+v, want code %q with a message", body.Error, code)
	}
	return body.Error
}

// decode decodes r's JSON body into a T.
func decode[T any](t testing.TB, r response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
	return v
}

// enqueue enqueues v into topic and returns the job.
func (e *env) enqueue(topic string, v any) apiv1.Job {
	e.t.Helper()
	return decode[apiv1.Job](e.t, e.call("POST", "/v1/topics/"+topic+"/jobs", v).want(e.t, http.StatusCreated))
}

// reserve reserves with v and returns the jobs.
func (e *env) reserve(topic string, v any) []apiv1.Job {
	e.t.Helper()
	r := e.call("POST", "/v1/topics/"+topic+"/reserve", v).want(e.t, http.StatusOK)
	return decode[struct {
		Jobs []apiv1.Job `json:"jobs"`
	}](e.t, r).Jobs
}

// reserveOne reserves exactly one job.
func (e *env) reserveOne(topic string, v any) apiv1.Job {
	e.t.Helper()
	jobs := e.reserve(topic, v)
	if len(jobs) != 1 {
		e.t.Fatalf("reserve got %d jobs, want 1", len(jobs))
	}
	return jobs[0]
}

// get returns a job.
func (e *env) get(topic, id string) apiv1.Job {
	e.t.Helper()
	return decode[apiv1.Job](e.t, e.call("GET", "/v1/topics/"+topic+"/jobs/"+id, nil).want(e.t, http.StatusOK))
}

// parseTime parses an API time, which must have exactly millisecond precision in UTC.
func parseTime(t testing.TB, v string) time.Time {
	t.Helper()
	if len(v) != len("2006-01-02T15:04:05.000Z") || !strings.HasSuffix(v, "Z") || v[19] != '.' {
		t.Fatalf("time %q is not RFC 3339 UTC with milliseconds", v)
	}
	tm, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		t.Fatalf("time %q: %v", v, err)
	}
	return tm
}
