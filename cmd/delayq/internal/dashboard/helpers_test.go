package dashboard

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/httpapi"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// site is delayq's API and dashboard on a redis-server of their own, as `delayq server` mounts
// them (behind its guard), and a browser-like HTTP client with a cookie jar that does not follow redirects.
type site struct {
	t      testing.TB
	client *delayq.Client
	url    string
	http   *http.Client
	reg    *prometheus.Registry
	log    *testwait.Buffer
	tokens []string
	dash   *Dashboard
}

// newSite starts a site; edit changes the dashboard's Config.
func newSite(t testing.TB, edit func(*Config)) *site {
	t.Helper()
	rdb := redistest.Standalone(t).Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	logs := &testwait.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	c, err := delayq.New(ctx, rdb, delayq.Config{Logger: logger, Partitions: 4})
	if err != nil {
		t.Fatalf("delayq.New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	cfg := Config{Client: c, Redis: rdb, RedisMode: "standalone", Registerer: prometheus.NewRegistry(), Logger: logger}
	if edit != nil {
		edit(&cfg)
	}
	api, err := httpapi.New(httpapi.Config{Client: c, Tokens: cfg.Tokens, Keyring: cfg.Keyring, Limiter: cfg.Limiter, Redis: rdb, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	guarded, err := httpapi.NewGuard(httpapi.GuardConfig{CheckHost: len(cfg.Tokens) == 0}, d.Mount(api))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(guarded)
	t.Cleanup(srv.Close)
	s := &site{t: t, client: c, url: srv.URL, log: logs, tokens: cfg.Tokens, dash: d}
	s.reg, _ = cfg.Registerer.(*prometheus.Registry)
	s.http = newBrowser(t)
	return s
}

func newBrowser(t testing.TB) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// answer is a response, read.
type answer struct {
	status int
	header http.Header
	body   string
}

func (s *site) do(req *http.Request) answer {
	s.t.Helper()
	resp, err := s.http.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, string(b)}
}

func (s *site) get(path string) answer {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.url+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	return s.do(req)
}

// post sends form to path as a browser's form would.
func (s *site) post(path string, form url.Values) answer {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url+path, strings.NewReader(form.Encode()))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return s.do(req)
}

var csrfInput = regexp.MustCompile(`(?:name="csrf_token" value=|"X-CSRF-Token": )"([^"]+)"`)

// csrf returns the CSRF token of the page at path.
func (s *site) csrf(path string) string {
	s.t.Helper()
	a := s.get(path)
	m := csrfInput.FindStringSubmatch(a.body)
	if m == nil {
		s.t.Fatalf("GET %s (%d) has no CSRF token:\n%s", path, a.status, a.body)
	}
	return m[1]
}

// act posts an action with the CSRF token of the page at from, confirmed.
func (s *site) act(from, path string, form url.Values) answer {
	s.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set(csrfField, s.csrf(from))
	form.Set("confirm", "yes")
	return s.post(path, form)
}

func (s *site) enqueue(topic string, spec delayq.Spec) *delayq.Job {
	s.t.Helper()
	j, err := s.client.Enqueue(context.Background(), topic, spec)
	if err != nil {
		s.t.Fatalf("Enqueue(%q): %v", spec.ID, err)
	}
	return j
}

// bury enqueues a job with id and sends it to the dead letters with the error "boom <b>".
func (s *site) bury(topic, id string) {
	s.t.Helper()
	s.buryWith(topic, id, "boom <b>")
}

// buryWith enqueues a job with id and sends it to the dead letters with the error errText.
func (s *site) buryWith(topic, id, errText string) {
	s.t.Helper()
	ctx := context.Background()
	s.enqueue(topic, delayq.Spec{ID: id, NoRetries: true})
	jobs, err := s.client.Reserve(ctx, topic, delayq.ReserveOptions{Max: 1, Wait: 5 * time.Second})
	if err != nil || len(jobs) != 1 || jobs[0].ID != id {
		s.t.Fatalf("Reserve = %v, %v; want %s", jobs, err, id)
	}
	if dead, err := s.client.Nack(ctx, jobs[0].Lease(), delayq.NackOptions{Error: errText}); err != nil || !dead {
		s.t.Fatalf("Nack = %v, %v", dead, err)
	}
}

func (s *site) state(topic, id string) string {
	s.t.Helper()
	j, err := s.client.Get(context.Background(), topic, id)
	if err != nil {
		return fmt.Sprint(err)
	}
	return string(j.State)
}

func wantStatus(t testing.TB, what string, a answer, status int) {
	t.Helper()
	if a.status != status {
		t.Fatalf("%s: status %d, want %d; body:\n%.2000s", what, a.status, status, a.body)
	}
}

// regexpFind returns the first group of pattern in s.
func regexpFind(t testing.TB, s, pattern string) string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %s in:\n%.3000s", pattern, s)
	}
	return m[1]
}

// allocatedBy returns the bytes the process allocated while f ran: f's, and the little that
// the site's background goroutines allocate meanwhile. A test that calls it must not be
// parallel, so that no other test's allocations are counted.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// deepJSON is a JSON body of 20 KB: arrays nested depth deep around a wide one. Indented, it
// would be about 2·depth² bytes.
func deepJSON(depth int) []byte {
	wide := strings.TrimSuffix(strings.Repeat("0,", 1000), ",")
	return []byte(strings.Repeat("[", depth) + wide + strings.Repeat("]", depth))
}
