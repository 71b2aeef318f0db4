package archive

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/testwait"
)

// agedOutcomes returns n outcomes of topic that finished age ago by this machine's clock,
// which is the test server's.
func agedOutcomes(topic string, n int, age time.Duration) []Outcome {
	batch := outcomes(topic, n)
	for i := range batch {
		batch[i].FinishedAt = time.Now().Add(-age)
	}
	return batch
}

// TestDeleteOlderThan deletes 10 old outcomes in batches of 3 and keeps the recent ones.
func TestDeleteOlderThan(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	var batches []int64
	s.onDeleteBatch = func(n int64) { batches = append(batches, n) }
	insert(t, s, agedOutcomes("old", 10, 48*time.Hour))
	insert(t, s, agedOutcomes("recent", 4, time.Hour))

	n, err := s.DeleteOlderThan(context.Background(), 24*time.Hour, 3)
	if err != nil || n != 10 {
		t.Fatalf("DeleteOlderThan = %d, %v; want 10", n, err)
	}
	if want := []int64{3, 3, 3, 1}; !slices.Equal(batches, want) {
		t.Errorf("batches deleted %v, want %v", batches, want)
	}
	left := queryAll(t, s)
	if len(left) != 4 || slices.ContainsFunc(left, func(o Outcome) bool { return o.Topic != "recent" }) {
		t.Errorf("left after retention: %v; want the 4 recent ones", labels(left))
	}
	n, err = s.DeleteOlderThan(context.Background(), 24*time.Hour, 3)
	if err != nil || n != 0 {
		t.Errorf("second DeleteOlderThan = %d, %v; want 0", n, err)
	}
}

// TestDeleteOlderThanInvalid checks that an age or batch size out of range is refused.
func TestDeleteOlderThanInvalid(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	for _, tc := range []struct {
		age   time.Duration
		batch int
	}{{0, 10}, {-time.Hour, 10}, {time.Hour, 0}, {time.Hour, -1}} {
		if _, err := s.DeleteOlderThan(context.Background(), tc.age, tc.batch); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("DeleteOlderThan(%v, %d) = %v, want ErrInvalidArgument", tc.age, tc.batch, err)
		}
	}
	if err := s.Retain(context.Background(), time.Hour, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Retain with no interval = %v, want ErrInvalidArgument", err)
	}
}

// TestRetain runs the retention loop: it deletes the old outcomes at once, those that age
// later at a following interval, and returns nil once its context ends.
func TestRetain(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	insert(t, s, agedOutcomes("old", 5, 2*time.Hour))
	soon := agedOutcomes("soon", 2, time.Hour-300*time.Millisecond)
	insert(t, s, soon)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Retain(ctx, time.Hour, 50*time.Millisecond) }()
	testwait.ForNil(t, 10*time.Second, "retention of the aged outcomes", func() error {
		if left := queryAll(t, s); len(left) != 0 {
			return fmt.Errorf("left: %v", labels(left))
		}
		return nil
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Retain = %v, want nil once its context ends", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Retain still running after its context ended")
	}
}
