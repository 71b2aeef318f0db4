package beanstalkd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/beanstalkd/backend"
	"github.com/delayq/delayq/delayqtest"
)

// A job enqueued with the Go library with an id, a unique_for and a replace (the record's
// fields 16 to 19) goes through its beanstalkd life as any other, and its delete keeps its id
// taken for its unique_for, as an ack or a cancel does.
func TestReplacedJobWithUniqueForThroughBeanstalkd(t *testing.T) {
	dq := delayqtest.NewClient(t, delayq.Config{})
	addr := startServer(t, Config{Backend: backend.New(dq, slog.New(slog.DiscardHandler))})
	ctx := context.Background()
	for _, body := range []string{"first", "hello"} {
		if _, err := dq.Enqueue(ctx, "lib", delayq.Spec{ID: "order-1", Body: []byte(body), UniqueFor: time.Hour,
			OnConflict: delayq.ConflictReplace}); err != nil {
			t.Fatal(err)
		}
	}
	c := dial(t, addr)
	c.do("watch lib")
	c.do("ignore default")
	c.do("use lib")
	var n uint64
	if _, err := fmt.Sscanf(c.do("peek-ready"), "FOUND %d 5\r\nhello\r\n", &n); err != nil {
		t.Fatalf("peek-ready: %v", err)
	}
	steps := []struct{ cmd, want string }{
		{"reserve-with-timeout 0", fmt.Sprintf("RESERVED %d 5\r\nhello\r\n", n)},
		{fmt.Sprintf("bury %d 3", n), "BURIED\r\n"},
		{"kick 1", "KICKED 1\r\n"},
		{"reserve-with-timeout 0", fmt.Sprintf("RESERVED %d 5\r\nhello\r\n", n)},
		{fmt.Sprintf("delete %d", n), "DELETED\r\n"},
	}
	for _, s := range steps {
		if got := c.do(s.cmd); got != s.want {
			t.Fatalf("%s: %q; want %q", s.cmd, got, s.want)
		}
	}
	delayqtest.AdvanceClock(dq, time.Minute) // past the replay window
	if _, err := dq.Enqueue(ctx, "lib", delayq.Spec{ID: "order-1", Body: []byte("again")}); !errors.Is(err, delayq.ErrDone) {
		t.Errorf("an enqueue of the id after its beanstalkd delete = %v, want ErrDone", err)
	}
}
