package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
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
	e.redis.Stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/v1/topics/gone/reserve", strings.NewReader(`{"max": 1}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := e.http.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the reserve answered %d while Redis was paused", resp.StatusCode)
	}
	e.redis.Cont(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		j := e.get("gone", "j")
		if j.State == "ready" && j.Attempts == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job of a reserve nobody read is %s with %d attempts, want ready with 0", j.State, j.Attempts)
		}
		time.Sleep(20 * time.Millisecond)
	}
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
	e.call("POST", "/v1/topics/big/reserve", map[string]any{"max_bytes": 0}).wantError(t, http.StatusBadRequest, codeInvalid)
}
