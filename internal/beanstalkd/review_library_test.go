package beanstalkd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/delayqtest"
	"github.com/delayq/delayq/internal/beanstalkd/backend"
)

// TestLibraryJobThroughItsWholeBeanstalkdLife wants a job enqueued with the Go library into a
// tube's topic to keep one beanstalkd id through peek, reserve, release, bury, kick and delete,
// and the delete to remove it from the store.
func TestLibraryJobThroughItsWholeBeanstalkdLife(t *testing.T) {
	dq := delayqtest.NewClient(t, delayq.Config{})
	addr := startServer(t, Config{Backend: backend.New(dq, slog.New(slog.DiscardHandler))})
	ctx := context.Background()
	job, err := dq.Enqueue(ctx, "lib", delayq.Spec{Body: []byte("hello")})
	if err != nil {
		t.Fatal(err)
	}
	c := dialPeer(t, addr)
	c.do("watch lib")
	c.do("ignore default")
	c.do("use lib")
	peeked := c.do("peek-ready")
	var n uint64
	if _, err := fmt.Sscanf(peeked, "FOUND %d 5\r\nhello\r\n", &n); err != nil {
		t.Fatalf("peek-ready: %q", peeked)
	}
	steps := []struct{ cmd, want string }{
		{"reserve-with-timeout 0", fmt.Sprintf("RESERVED %d 5\r\nhello\r\n", n)},
		{fmt.Sprintf("release %d 10 0", n), "RELEASED\r\n"},
		{"reserve-with-timeout 0", fmt.Sprintf("RESERVED %d 5\r\nhello\r\n", n)},
		{fmt.Sprintf("bury %d 3", n), "BURIED\r\n"},
		{"peek-buried", fmt.Sprintf("FOUND %d 5\r\nhello\r\n", n)},
		{"kick 1", "KICKED 1\r\n"},
		{"reserve-with-timeout 0", fmt.Sprintf("RESERVED %d 5\r\nhello\r\n", n)},
		{fmt.Sprintf("delete %d", n), "DELETED\r\n"},
		{fmt.Sprintf("peek %d", n), "NOT_FOUND\r\n"},
		{"reserve-with-timeout 0", "TIMED_OUT\r\n"},
	}
	for _, s := range steps {
		if got := c.do(s.cmd); got != s.want {
			t.Errorf("%s: %q; want %q", s.cmd, got, s.want)
		}
	}
	if _, err := dq.Get(ctx, "lib", job.ID); !errors.Is(err, delayq.ErrNotFound) {
		t.Errorf("Get after the beanstalkd delete: %v; want ErrNotFound", err)
	}
}

// TestManyConnectionsPutAndReserveAtOnce wants every job put by many connections at once,
// into two tubes, reserved exactly once by many others watching both, none lost.
func TestManyConnectionsPutAndReserveAtOnce(t *testing.T) {
	addr := startServer(t, Config{Backend: newDelayqBackend(t)})
	const producers, consumers, perProducer = 8, 8, 40
	total := producers * perProducer
	var (
		mu   sync.Mutex
		seen = map[string]int{}
		errs []string
		wg   sync.WaitGroup
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		errs = append(errs, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	done := make(chan struct{})
	for i := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dialPeer(t, addr)
			c.send("watch t0", "watch t1", "ignore default")
			for range 3 {
				if _, err := c.tryRead(conversationTimeout); err != nil {
					fail("consumer %d: watch: %v", i, err)
					return
				}
			}
			for {
				select {
				case <-done:
					return
				default:
				}
				c.send("reserve-with-timeout 1")
				r, err := c.tryRead(conversationTimeout)
				if err != nil {
					fail("consumer %d: reserve: %v", i, err)
					return
				}
				if r == "TIMED_OUT\r\n" {
					continue
				}
				var id uint64
				var size int
				if _, err := fmt.Sscanf(r, "RESERVED %d %d", &id, &size); err != nil {
					fail("consumer %d: reserve: %q", i, r)
					return
				}
				body := strings.SplitN(r, "\r\n", 3)[1]
				mu.Lock()
				seen[body]++
				mu.Unlock()
				c.send(fmt.Sprintf("delete %d", id))
				if r, err := c.tryRead(conversationTimeout); err != nil || r != "DELETED\r\n" {
					fail("consumer %d: delete %d: %q, %v", i, id, r, err)
					return
				}
			}
		}()
	}
	var pwg sync.WaitGroup
	for p := range producers {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			c := dialPeer(t, addr)
			for k := range perProducer {
				c.send(fmt.Sprintf("use t%d", k%2))
				if r, err := c.tryRead(conversationTimeout); err != nil || !strings.HasPrefix(r, "USING") {
					fail("producer %d: use: %q, %v", p, r, err)
					return
				}
				body := fmt.Sprintf("p%d-%d", p, k)
				c.send(fmt.Sprintf("put %d 0 30 %d", k%3, len(body)), body)
				if r, err := c.tryRead(conversationTimeout); err != nil || !strings.HasPrefix(r, "INSERTED") {
					fail("producer %d: put: %q, %v", p, r, err)
					return
				}
			}
		}()
	}
	pwg.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n >= total || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(done)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, e := range errs {
		t.Error(e)
	}
	if len(seen) != total {
		t.Errorf("%d distinct jobs reserved; want %d", len(seen), total)
	}
	for body, k := range seen {
		if k != 1 {
			t.Errorf("job %s reserved %d times; want once", body, k)
		}
	}
}
