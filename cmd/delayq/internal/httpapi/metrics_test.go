package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/metrics"
)

// With tokens, /metrics needs one (its series name the topics), unless the operator made it
// public; / and the health checks never do.
func TestMetricsNeedAToken(t *testing.T) {
	t.Parallel()
	closed := newEnv(t, func(c *Config) { c.Tokens = []string{"tok"} })
	closed.raw(closed.url, "GET", "/metrics", "", "").wantError(t, http.StatusUnauthorized, codeUnauthenticated)
	closed.raw(closed.url, "GET", "/metrics", "", "", "Authorization", "Bearer tok").want(t, http.StatusOK)
	for _, path := range []string{"/", "/healthz", "/readyz"} {
		closed.raw(closed.url, "GET", path, "", "").want(t, http.StatusOK)
	}
	open := newEnv(t, func(c *Config) { c.Tokens, c.MetricsPublic = []string{"tok"}, true })
	open.raw(open.url, "GET", "/metrics", "", "").want(t, http.StatusOK)
	open.raw(open.url, "GET", "/v1/topics", "", "").wantError(t, http.StatusUnauthorized, codeUnauthenticated)
}

// Requests are counted by route template, method and status code: the ids in paths do not
// make series of their own, and unknown paths share one.
func TestRequestMetricsByRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.enqueue("r", map[string]any{"id": "a"})
	e.get("r", "a")
	e.call("GET", "/v1/topics/r/jobs/b", nil).want(t, http.StatusNotFound)
	e.call("GET", "/no/such/path/1", nil).want(t, http.StatusNotFound)
	e.call("GET", "/no/such/path/2", nil).want(t, http.StatusNotFound)
	e.call("GET", "/v1/topics/r/jobs/batch", nil).want(t, http.StatusMethodNotAllowed)
	m := string(e.call("GET", "/metrics", nil).want(t, http.StatusOK).body)
	for _, want := range []string{
		`delayq_http_requests_total{code="201",method="POST",route="/v1/topics/{topic}/jobs"} 1`,
		`delayq_http_requests_total{code="200",method="GET",route="/v1/topics/{topic}/jobs/{id}"} 1`,
		`delayq_http_requests_total{code="404",method="GET",route="/v1/topics/{topic}/jobs/{id}"} 1`,
		`delayq_http_requests_total{code="404",method="GET",route="unmatched"} 2`,
		`delayq_http_requests_total{code="405",method="GET",route="/v1/topics/{topic}/jobs/batch"} 1`,
		`delayq_http_request_duration_seconds_count{code="201",method="POST",route="/v1/topics/{topic}/jobs"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(m, `route="/v1/topics/r`) || strings.Contains(m, "/no/such") {
		t.Errorf("a path, not a route template, became a label")
	}
}

// The per-topic series of a topic that no longer exists stop being exported.
func TestMetricsForgetTopicsThatAreGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.enqueue("fleeting", map[string]any{"id": "a"})
	if m := string(e.call("GET", "/metrics", nil).body); !strings.Contains(m, `delayq_jobs_enqueued_total{topic="fleeting"} 1`) {
		t.Fatalf("no series of the topic:\n%s", m)
	}
	// The topic's data goes (an operator flushed the namespace).
	if err := e.redis.Client(t).FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	// A scrape drops them (and says it could read the store); the next one no longer has them.
	e.call("GET", "/metrics", nil)
	if m := string(e.call("GET", "/metrics", nil).body); strings.Contains(m, `topic="fleeting"`) {
		t.Fatalf("series of a topic that is gone:\n%s", m)
	}
}

// A job counted while a scrape reads the topic registry, in a topic registered after that read
// (its first enqueue, from another request), keeps its series: the scrape forgets only topics
// that had series before it read the registry.
func TestScrapeKeepsATopicRegisteredWhileItReads(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	m := metrics.New(prometheus.NewRegistry())
	c := newTopicCollector(e.client, m, 5*time.Second, false, slog.Default())
	read := c.topics
	c.topics = func(ctx context.Context) ([]delayq.TopicStats, error) {
		topics, err := read(ctx)
		// Another request enqueues the first job of a new topic now, after the read.
		if _, err := e.client.Enqueue(ctx, "new", delayq.Spec{Body: []byte("x")}); err != nil {
			t.Error(err)
		}
		m.Enqueued.WithLabelValues("new").Inc()
		return topics, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.Enqueued.WithLabelValues("new")); got != 1 {
		t.Errorf("jobs_enqueued_total of the new topic after the scrape = %v, want 1", got)
	}
}

// With tokens, the root page links to nothing that would answer 401, and says how to send one.
func TestRootPageWithTokens(t *testing.T) {
	t.Parallel()
	for _, public := range []bool{false, true} {
		e := newEnv(t, func(c *Config) { c.Tokens, c.MetricsPublic = []string{"tok"}, public })
		page := string(e.raw(e.url, "GET", "/", "", "").want(t, http.StatusOK).body)
		if !strings.Contains(page, "Authorization: Bearer") {
			t.Errorf("the page does not say how to send a token:\n%s", page)
		}
		for _, link := range regexp.MustCompile(`href="([^"]+)"`).FindAllStringSubmatch(page, -1) {
			if status := e.raw(e.url, "GET", link[1], "", "").status; status != http.StatusOK {
				t.Errorf("metrics public %v: the page links to %s, which answers %d", public, link[1], status)
			}
		}
	}
	open := newEnv(t, nil)
	if page := string(open.raw(open.url, "GET", "/", "", "").body); !strings.Contains(page, `href="/v1/topics"`) {
		t.Errorf("without tokens the page should link to the API:\n%s", page)
	}
}
