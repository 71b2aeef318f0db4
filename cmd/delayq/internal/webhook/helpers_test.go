package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/metrics"
	"github.com/delayq/delayq/internal/redistest"
)

// testSecret is the secret of the Standard Webhooks specification's test vector.
const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// allowLoopback lets callbacks reach the test receivers on 127.0.0.1.
var allowLoopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// testLogger writes to the test's log until the test's cleanups are done; later lines
// (from goroutines that outlive the test) are dropped rather than reported against it.
func testLogger(t testing.TB) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(w.close) // registered first, so it runs after every later cleanup
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	mu     sync.Mutex
	t      testing.TB
	closed bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}

// env is one test's Redis server with a Client on it.
type env struct {
	srv *redistest.Server
	rdb *redis.Client
	c   *delayq.Client
	log *slog.Logger
}

func newEnv(t testing.TB) *env {
	t.Helper()
	log := testLogger(t)
	srv := redistest.Standalone(t)
	e := &env{srv: srv, log: log}
	e.rdb = srv.Client(t)
	e.c = e.newClient(t)
	return e
}

// newClient returns one more Client on the env's Redis, through a connection pool of its own,
// as a second server process would have.
func (e *env) newClient(t testing.TB) *delayq.Client {
	t.Helper()
	c, err := delayq.New(testContext(t), e.srv.Client(t), delayq.Config{Logger: e.log})
	if err != nil {
		t.Fatalf("delayq.New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// start returns a started Dispatcher; cfg's Client, Secret, Guard and Logger default to the
// env's Client, testSecret, a loopback-allowing Guard and the test log. It is stopped when the
// test ends.
func (e *env) start(t testing.TB, cfg Config) *Dispatcher {
	t.Helper()
	if cfg.Client == nil {
		cfg.Client = e.c
	}
	if cfg.Secret == nil {
		cfg.Secret = mustSecret(t, testSecret)
	}
	if cfg.Guard == nil {
		cfg.Guard = NewGuard(allowLoopback)
	}
	if cfg.Logger == nil {
		cfg.Logger = e.log
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := d.Start(testContext(t)); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := d.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return d
}

func (e *env) enqueue(t testing.TB, topic string, s delayq.Spec) *delayq.Job {
	t.Helper()
	j, err := e.c.Enqueue(testContext(t), topic, s)
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	return j
}

// get returns the job, or nil once it is gone.
func (e *env) get(t testing.TB, topic, id string) *delayq.Job {
	t.Helper()
	j, err := e.c.Get(testContext(t), topic, id)
	if errors.Is(err, delayq.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return j
}

func mustSecret(t testing.TB, s string) []byte {
	t.Helper()
	key, err := ParseSecret(s)
	if err != nil {
		t.Fatalf("ParseSecret: %v", err)
	}
	return key
}

// delivery is one request a receiver got.
type delivery struct {
	path    string
	header  http.Header
	body    []byte
	fields  map[string]json.RawMessage
	at      time.Time // by this process's clock
	redisAt time.Time // by the Redis server's clock, when the receiver has one
}

// attempt returns the delivery's attempt field.
func (d delivery) attempt(t testing.TB) int {
	t.Helper()
	n, err := strconv.Atoi(string(d.fields["attempt"]))
	if err != nil {
		t.Fatalf("attempt %s: %v", d.fields["attempt"], err)
	}
	return n
}

// str returns a string field of the delivery's payload.
func (d delivery) str(t testing.TB, name string) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(d.fields[name], &s); err != nil {
		t.Fatalf("field %q = %s: %v", name, d.fields[name], err)
	}
	return s
}

// receiver is a callback endpoint on 127.0.0.1 that records every request before answering it
// with its handler.
type receiver struct {
	srv     *httptest.Server
	rdb     *redis.Client // reads the Redis clock on each request when set
	handler http.HandlerFunc

	mu  sync.Mutex
	got []delivery
}

func newReceiver(t testing.TB, rdb *redis.Client, h http.HandlerFunc) *receiver {
	t.Helper()
	r := &receiver{rdb: rdb, handler: h}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	d := delivery{path: req.URL.Path, header: req.Header.Clone(), at: time.Now()}
	if r.rdb != nil {
		if now, err := r.rdb.Time(req.Context()).Result(); err == nil {
			d.redisAt = now
		}
	}
	d.body, _ = io.ReadAll(req.Body)
	_ = json.Unmarshal(d.body, &d.fields)
	r.mu.Lock()
	r.got = append(r.got, d)
	r.mu.Unlock()
	if r.handler != nil {
		r.handler(w, req)
	}
}

func (r *receiver) url(path string) string { return r.srv.URL + path }

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// verifyStandardWebhook checks a request's signature the way the Standard Webhooks
// specification tells receivers to, written here apart from the package's own signing code:
// decode the whsec_ secret, HMAC-SHA256 over "id.timestamp.body", compare with each v1
// signature of the space-separated header, and refuse stale timestamps.
func verifyStandardWebhook(secret string, h http.Header, body []byte, now time.Time) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return err
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	if id == "" || ts == "" {
		return errors.New("missing webhook-id or webhook-timestamp")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("webhook-timestamp %q: %w", ts, err)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("webhook-timestamp %q is %v away", ts, d)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + string(body)))
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		version, b64, _ := strings.Cut(sig, ",")
		got, err := base64.StdEncoding.DecodeString(b64)
		if version == "v1" && err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("no valid v1 signature in %q", h.Get("webhook-signature"))
}

// newMetrics returns metrics on a registry of their own.
func newMetrics() *metrics.Metrics { return metrics.New(prometheus.NewRegistry()) }

// counter reads one counter of a vector.
func counter(t testing.TB, v *prometheus.CounterVec, labels ...string) float64 {
	t.Helper()
	var m dto.Metric
	if err := v.WithLabelValues(labels...).Write(&m); err != nil {
		t.Fatalf("reading counter %v: %v", labels, err)
	}
	return m.GetCounter().GetValue()
}
