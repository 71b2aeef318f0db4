// Package testwait lets tests wait for something to happen: it polls a condition until it holds
// and fails the test, saying what it waited for, when a deadline passes first. A deadline costs
// nothing when the event comes early, so callers give generous ones: the tests run on loaded
// machines, under the race detector. Buffer holds the output, such as a server's log, that such
// a condition reads.
package testwait

import (
	"fmt"
	"testing"
	"time"
)

// maxInterval bounds the pause between two polls. Polls start 1 ms apart and back off to it, so
// that a quick event is seen at once and a slow one costs few polls.
const maxInterval = 20 * time.Millisecond

// For polls cond until it returns true, and fails t with "timed out after <timeout> waiting for
// <what>" when timeout passes first. cond runs on the calling goroutine, so it may call t.Fatal.
func For(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := poll(timeout, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}); err != nil {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// ForNil polls check until it returns nil, and fails t with check's last error when timeout
// passes first.
func ForNil(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	if err := poll(timeout, check); err != nil {
		t.Fatalf("timed out after %v waiting for %s: %v", timeout, what, err)
	}
}

// Until polls check until it returns nil and returns nil, or returns check's last error once
// timeout has passed. It is for code that reports instead of failing a test itself.
func Until(timeout time.Duration, check func() error) error {
	if err := poll(timeout, check); err != nil {
		return fmt.Errorf("not within %v: %w", timeout, err)
	}
	return nil
}

var errNotYet = fmt.Errorf("not yet")

func poll(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	interval := time.Millisecond
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(interval)
		interval = min(2*interval, maxInterval)
	}
}
