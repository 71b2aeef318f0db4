package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delayq/delayq"
)

// The page benchmarks time the handlers alone (no network), against a real redis-server:
//
//	go test -run '^$' -bench Page -benchtime 20x ./cmd/delayq/internal/dashboard/
//
// DELAYQ_BENCH_JOBS sets the jobs of the big topic (default 100,000; half of them delayed, half
// due), DELAYQ_BENCH_TOPICS the topics of the overview (default 1,000). Besides its time, each
// reports the bytes of a page (page-B) and those allocated to serve it (B/op), which bound the
// memory one request holds at once.

func benchSize(b *testing.B, name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("%s=%q: %v", name, v, err)
		}
		return n
	}
	return def
}

// fillTopics enqueues 3 jobs to each of n topics, in batches of one topic each, 8 at a time.
func fillTopics(b *testing.B, c *delayq.Client, n int) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				fill(b, c, fmt.Sprintf("topic-%05d", i), "j", 3, time.Now().Add(time.Hour))
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// fill enqueues n jobs to topic, in batches, due at from plus their index in ms.
func fill(b *testing.B, c *delayq.Client, topic, prefix string, n int, from time.Time) {
	ctx := context.Background()
	specs := make([]delayq.Spec, 0, 1000)
	for i := 0; i < n; i++ {
		specs = append(specs, delayq.Spec{ID: fmt.Sprintf("%s-%08d", prefix, i), RunAt: from.Add(time.Duration(i) * time.Millisecond),
			Body: []byte(`{"order":12345,"customer":"c-1"}`), Format: delayq.FormatJSON})
		if len(specs) < cap(specs) && i < n-1 {
			continue
		}
		results, err := c.EnqueueBatch(ctx, topic, specs)
		if err != nil {
			b.Error(err)
			return
		}
		for _, r := range results {
			if r.Err != nil {
				b.Error(r.Err)
				return
			}
		}
		specs = specs[:0]
	}
}

// benchPage times GET path, which must answer 200 with rows rows of a table.
func benchPage(b *testing.B, h http.Handler, path string, rows int) {
	b.Helper()
	b.ReportAllocs()
	size := 0
	b.ResetTimer()
	for range b.N {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d %.300s", path, rec.Code, rec.Body.String())
		}
		if got := strings.Count(rec.Body.String(), "<tr data-"); got != rows {
			b.Fatalf("GET %s: %d rows, want %d", path, got, rows)
		}
		size = rec.Body.Len()
	}
	b.StopTimer()
	b.ReportMetric(float64(size), "page-B")
}

func BenchmarkPageOverview(b *testing.B) {
	s := newSite(b, nil)
	topics := benchSize(b, "DELAYQ_BENCH_TOPICS", 1000)
	fillTopics(b, s.client, topics)
	d, _ := New(Config{Client: s.client})
	rows := min(topics, topicsPerPage)
	b.Run(fmt.Sprintf("topics=%d", topics), func(b *testing.B) { benchPage(b, d, "/?sort=dead", rows) })
	b.Run(fmt.Sprintf("refresh/topics=%d", topics), func(b *testing.B) { benchPage(b, d, "/overview/topics?sort=oldest", rows) })
	b.Run(fmt.Sprintf("search/topics=%d", topics), func(b *testing.B) { benchPage(b, d, "/search?q=nowhere", 0) })
}

func BenchmarkPageTopic(b *testing.B) {
	s := newSite(b, nil)
	n := benchSize(b, "DELAYQ_BENCH_JOBS", 100_000)
	for i := range 100 {
		s.bury("big", fmt.Sprintf("dead-%03d", i))
	}
	s.enqueue("big", delayq.Spec{ID: "deep", Body: deepJSON(9000), Format: delayq.FormatJSON, Delay: 2 * time.Hour})
	fill(b, s.client, "big", "later", n/2, time.Now().Add(time.Hour))
	fill(b, s.client, "big", "due", n-n/2, time.Now().Add(-time.Hour))
	d, _ := New(Config{Client: s.client})
	deep := ""
	for range 20 {
		_, next, err := s.client.Jobs(context.Background(), "big", delayq.StateDelayed, 1000, deep)
		if err != nil {
			b.Fatal(err)
		}
		deep = next
	}
	for _, page := range []struct {
		name, path string
		rows       int
	}{
		{"delayed", "/topics/big?state=delayed", jobsPerPage},
		{"delayed-after-20000", "/topics/big?state=delayed&cursor=" + deep, jobsPerPage},
		{"ready", "/topics/big?state=ready", jobsPerPage},
		{"dead", "/topics/big?state=dead", jobsPerPage},
		{"job", "/topics/big/jobs/later-00000001", 0},
		{"job-deep-body", "/topics/big/jobs/deep", 0},
		{"body-search", "/search?topic=big&body=nowhere", 0},
	} {
		b.Run(fmt.Sprintf("%s/jobs=%d", page.name, n), func(b *testing.B) { benchPage(b, d, page.path, page.rows) })
	}
}
