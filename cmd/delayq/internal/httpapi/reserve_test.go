package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delayq/delayq"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
	"github.com/delayq/delayq/internal/testwait"
)

// A client that hangs up while its reserve is being served burns nothing: the job is put back
// at once, its attempt not counted. Redis is paused (SIGSTOP) so that the reserve script runs
// only after the client has gone.
func TestReserveOfAClientThatLeftPutsTheJobBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.RequestTimeout = 5 * time.Second })
	// A first reserve sets up the topic's wake-up subscription, so that the next one goes
	// straight to the reserve script.
	e.enqueue("gone", map[string]any{"id": "later", "delay_ms": 3600000})
	if got := e.reserve("gone", nil); len(got) != 0 {
		t.Fatalf("reserve of an empty topic: %v", got)
	}
	e.enqueue("gone", map[string]any{"id": "j", "max_retries": 0})
	// The server tells when it has noticed the client leave: only a hang-up noticed before the
	// answer is written can be told apart from an answer lost on the way.
	noticed := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		go func() {
			<-r.Context().Done()
			close(noticed)
		}()
		e.handler.ServeHTTP(w, r)
	}))
	defer srv.Close()
	e.redis.Stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/topics/gone/reserve", strings.NewReader(`{"max": 1}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := srv.Client().Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the reserve answered %d while Redis was paused", resp.StatusCode)
	}
	select {
	case <-noticed:
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not notice the client leave")
	}
	e.redis.Cont(t)
	testwait.ForNil(t, 20*time.Second, "the job of a reserve nobody read to be ready with 0 attempts", func() error {
		if j := e.get("gone", "j"); j.State != "ready" || j.Attempts != 0 {
			return fmt.Errorf("%s with %d attempts", j.State, j.Attempts)
		}
		return nil
	})
	got := e.reserveOne("gone", nil)
	if got.ID != "j" || got.Attempts != 1 {
		t.Fatalf("next reserve: %+v", got)
	}
}

// max_bytes bounds a reserve's jobs by size, with at least one job whatever its size.
func TestReserveMaxBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	body := strings.Repeat("x", 1000)
	for _, id := range []string{"a", "b", "c", "d"} {
		e.enqueue("big", map[string]any{"id": id, "body": body})
	}
	if got := e.reserve("big", map[string]any{"max": 10, "max_bytes": 2500}); len(got) != 2 {
		t.Fatalf("max_bytes 2500 over 1000-byte bodies leased %d jobs, want 2", len(got))
	}
	if got := e.reserve("big", map[string]any{"max": 10, "max_bytes": 1}); len(got) != 1 {
		t.Fatalf("max_bytes 1 leased %d jobs, want 1", len(got))
	}
	e.badRequests().call("POST", "/v1/topics/big/reserve", map[string]any{"max_bytes": 0}).wantError(t, http.StatusBadRequest, codeInvalid)
}

// Concurrent reserves over large jobs stay within their byte budgets, and the process allocates
// in proportion to what they return, not to the backlog: 256 jobs of 64 KiB (16 MiB) wait and 4
// clients each reserve up to 100 with a 192 KiB budget (two jobs). They allocate less than one
// copy of the backlog, where reading it whole would allocate several. Not parallel, so that
// other tests' allocations stay out of the count.
func TestConcurrentLargeReservesStayWithinTheirBudget(t *testing.T) {
	e := newEnv(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	big, err := delayq.New(ctx, e.redis.Client(t), delayq.Config{Limits: delayq.Limits{MaxBody: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	const jobs, size, budget, clients = 256, 64 << 10, 3 * 64 << 10, 4
	specs := make([]delayq.Spec, jobs)
	for i := range specs {
		specs[i] = delayq.Spec{Body: bytes.Repeat([]byte{'x'}, size)}
	}
	if _, err := big.EnqueueBatch(ctx, "large", specs); err != nil {
		t.Fatal(err)
	}
	e.reserve("large", map[string]any{"max": 1, "max_bytes": 1}) // warm up the topic's state

	// A plain client: the contract check of the test clients would count its own copies.
	plain := &http.Client{Timeout: 30 * time.Second}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	leased := make([]int, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/v1/topics/large/reserve",
				strings.NewReader(fmt.Sprintf(`{"max": 100, "max_bytes": %d}`, budget)))
			req.Header.Set("Content-Type", "application/json")
			resp, err := plain.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			n, err := countJobs(resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("reserve: %d %v", resp.StatusCode, err)
				return
			}
			leased[i] = n
		}()
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	for i, n := range leased {
		if n < 1 || n > budget/size+1 {
			t.Errorf("client %d leased %d jobs of %d bytes with a %d-byte budget", i, n, size, budget)
		}
	}
	total := 0
	for _, n := range leased {
		total += n
	}
	t.Logf("%d reserves leased %d jobs of %d KiB and allocated %d MiB", clients, total, size>>10, allocated>>20)
	if limit := uint64(jobs * size); allocated > limit {
		t.Fatalf("%d reserves leasing %d KiB allocated %d MiB, more than the backlog (%d MiB)",
			clients, total*size>>10, allocated>>20, limit>>20)
	}
}

// countJobs reads a reserve answer and returns the number of its jobs, counting their "lease"
// fields as they stream past instead of decoding the answer, which would allocate a copy of it.
func countJobs(r io.Reader) (int, error) {
	field := []byte(`"lease":`)
	n, kept := 0, 0
	buf := make([]byte, 32<<10)
	for {
		k, err := r.Read(buf[kept:])
		data := buf[:kept+k]
		n += bytes.Count(data, field)
		kept = min(len(field)-1, len(data))
		copy(buf, data[len(data)-kept:])
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// A reserve on a topic that does not exist answers no jobs, as on an empty topic, and says so
// in the Delayq-Topic-Exists header and the topic_exists field, without creating the topic.
func TestReserveTellsWhetherTheTopicExists(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	type answer struct {
		Jobs        []apiv1.Job `json:"jobs"`
		TopicExists *bool       `json:"topic_exists"`
	}
	reserve := func(topic string, req map[string]any) (answer, string) {
		t.Helper()
		r := e.call("POST", "/v1/topics/"+topic+"/reserve", req).want(t, http.StatusOK)
		return decode[answer](t, r), r.header.Get("Delayq-Topic-Exists")
	}
	for _, req := range []map[string]any{{}, {"wait_ms": 50}} {
		a, header := reserve("no-such-topic", req)
		if len(a.Jobs) != 0 || a.TopicExists == nil || *a.TopicExists || header != "false" {
			t.Errorf("reserve %v of a topic that does not exist: %+v, Delayq-Topic-Exists %q; want no jobs, topic_exists false, header false", req, a, header)
		}
	}
	e.call("GET", "/v1/topics/no-such-topic", nil).wantError(t, http.StatusNotFound, "not_found")

	e.enqueue("orders", map[string]any{"id": "later", "delay_ms": 3600000})
	a, header := reserve("orders", map[string]any{})
	if len(a.Jobs) != 0 || a.TopicExists != nil || header != "true" {
		t.Errorf("reserve of an existing empty topic: %+v, Delayq-Topic-Exists %q; want no jobs, no topic_exists, header true", a, header)
	}
	e.enqueue("orders", map[string]any{"id": "now"})
	a, header = reserve("orders", map[string]any{})
	if len(a.Jobs) != 1 || a.TopicExists != nil || header != "true" {
		t.Errorf("reserve of a job: %+v, Delayq-Topic-Exists %q; want one job, no topic_exists, header true", a, header)
	}
}
