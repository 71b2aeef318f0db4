package beanstalkd

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/delayqtest"
	"github.com/delayq/delayq/internal/beanstalkd/backend"
	"github.com/delayq/delayq/internal/beanstalkd/proto"
)

// eachBackend runs test on the in-memory Backend and on delayq's, each in a subtest.
func eachBackend(t *testing.T, test func(t *testing.T, newBackend func() proto.Backend)) {
	t.Run("memory", func(t *testing.T) {
		test(t, func() proto.Backend { return newMemBackend() })
	})
	t.Run("delayq", func(t *testing.T) {
		test(t, func() proto.Backend { return newDelayqBackend(t) })
	})
}

// newDelayqBackend returns the delayq Backend on a Client of a redis-server of its own.
func newDelayqBackend(t testing.TB) *backend.Backend {
	t.Helper()
	return newDelayqBackendWith(t, delayq.Config{})
}

// newDelayqBackendWith is newDelayqBackend with a Client made with cfg.
func newDelayqBackendWith(t testing.TB, cfg delayq.Config) *backend.Backend {
	t.Helper()
	return backend.New(delayqtest.NewClient(t, cfg), slog.New(slog.DiscardHandler))
}

// TestDelayqPeekReadyIsTheMostUrgent wants peek-ready to show the job a reserve would get:
// the lowest priority, then the lowest id, whatever order the jobs were put in.
func TestDelayqPeekReadyIsTheMostUrgent(t *testing.T) {
	b := newDelayqBackend(t)
	ctx := context.Background()
	var urgent uint64
	for _, pri := range []uint32{100, 1, 50, 1} {
		id, _, err := b.Put(ctx, "peek", pri, 0, time.Minute, []byte("body"))
		if err != nil {
			t.Fatal(err)
		}
		if pri == 1 && urgent == 0 {
			urgent = id
		}
	}
	j, err := b.PeekState(ctx, "peek", "ready")
	if err != nil {
		t.Fatal(err)
	}
	if j.ID != urgent {
		t.Errorf("peek-ready shows job %d; want %d, the first put with priority 1", j.ID, urgent)
	}
}

// TestDelayqStatsJobCountsAReserveOnce wants a job reserved once to say reserves: 1 while it is
// reserved, as beanstalkd does.
func TestDelayqStatsJobCountsAReserveOnce(t *testing.T) {
	b := newDelayqBackend(t)
	ctx := context.Background()
	id, _, err := b.Put(ctx, "stats", 0, 0, time.Minute, []byte("body"))
	if err != nil {
		t.Fatal(err)
	}
	const session proto.Session = 1
	if _, err := b.Reserve(ctx, session, []string{"stats"}, time.Second); err != nil {
		t.Fatal(err)
	}
	st, err := b.StatsJob(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "reserved" || st.Reserves != 1 {
		t.Errorf("stats-job of a job reserved once: state %q, reserves %d; want reserved, 1", st.State, st.Reserves)
	}
}
