package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
	"github.com/delayq/delayq/internal/redistest"
)

// A batch on a Cluster with one shard down answers 200 with each job's own result: the jobs of
// the live shards are stored (and a retry of the batch finds them existing), those of the dead
// shard are unavailable.
func TestBatchWithAShardDownAnswersPerJob(t *testing.T) {
	t.Parallel()
	cluster := redistest.NewCluster(t, 3, 0)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: cluster.Addrs(), DialTimeout: 200 * time.Millisecond,
		ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: 1, MaxRedirects: 1,
	})
	t.Cleanup(func() { rdb.Close() })
	// The live shards keep serving once the cluster marks the dead one as failed.
	for _, node := range cluster.Nodes {
		if err := node.Client(t).ConfigSet(context.Background(), "cluster-require-full-coverage", "no").Err(); err != nil {
			t.Fatal(err)
		}
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := delayq.New(ctx, rdb, delayq.Config{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	h, err := New(Config{Client: c, Redis: rdb, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	if _, err := c.Enqueue(ctx, "half", delayq.Spec{ID: "before", Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	cluster.Nodes[0].Kill(t)

	jobs := make([]map[string]any, 60)
	for i := range jobs {
		jobs[i] = map[string]any{"id": fmt.Sprintf("j%d", i), "delay_ms": 3600000}
	}
	body, _ := json.Marshal(map[string]any{"jobs": jobs})
	post := func() (int, []apiv1.BatchResult) {
		resp, err := http.Post(srv.URL+"/v1/topics/half/jobs/batch", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Results []apiv1.BatchResult `json:"results"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, out.Results
	}
	status, results := post()
	if status != http.StatusOK || len(results) != len(jobs) {
		t.Fatalf("status %d with %d results, want 200 with %d", status, len(results), len(jobs))
	}
	stored := map[int]bool{}
	for i, r := range results {
		switch {
		case r.Job != nil:
			stored[i] = true
		case r.Error == nil || r.Error.Code != codeUnavailable:
			t.Fatalf("result %d: %+v, want a job or unavailable", i, r)
		}
	}
	if len(stored) == 0 || len(stored) == len(jobs) {
		t.Fatalf("%d of %d stored: want some but not all", len(stored), len(jobs))
	}
	// The producer retries the whole batch: what was stored answers as it did (retrying is safe),
	// the rest is unavailable again.
	_, again := post()
	for i, r := range again {
		if stored[i] && (r.Job == nil || r.Job.ID != results[i].Job.ID || !r.Job.CreatedAt.Equal(results[i].Job.CreatedAt.Time)) {
			t.Errorf("retry, result %d: %+v, want the job the first try stored", i, r)
		}
		if !stored[i] && (r.Error == nil || r.Error.Code != codeUnavailable) {
			t.Errorf("retry, result %d: %+v, want unavailable", i, r)
		}
	}
}
