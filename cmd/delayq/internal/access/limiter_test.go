package access

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestLimiterBacksOffPerAddress(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	l := NewLimiter()
	l.SetClock(func() time.Time { return now })
	for i := range FreeFailures {
		if w := l.Failed("192.0.2.1"); w != 0 {
			t.Fatalf("wrong token %d waits %v", i+1, w)
		}
	}
	for range 10 { // each after waiting as long as told
		for w := l.Failed("192.0.2.1"); w != 0; w = l.Failed("192.0.2.1") {
			now = now.Add(w)
		}
	}
	if w := l.Failed("192.0.2.1"); w != MaxBackoff {
		t.Errorf("after many wrong tokens the wait is %v, want at most %v", w, MaxBackoff)
	}
	if w := l.Failed("192.0.2.2"); w != 0 {
		t.Errorf("another address waits %v", w)
	}
	now = now.Add(Forget)
	l.Failed("192.0.2.1")
	if w := l.Failed("192.0.2.1"); w != 0 {
		t.Errorf("a wrong token long after the others waits %v: they are forgotten", w)
	}
}

// Wrong tokens sent at once are counted one by one: no more than the free ones are answered
// as plain failures.
func TestLimiterCountsWrongTokensSentAtOnce(t *testing.T) {
	t.Parallel()
	l := NewLimiter()
	var passed atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if l.Failed("192.0.2.1") == 0 {
				passed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := passed.Load(); n != FreeFailures {
		t.Errorf("%d of 50 wrong tokens at once were read, want %d", n, FreeFailures)
	}
}

func TestLimiterTracksAtMostMaxAddrs(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	l := NewLimiter()
	l.SetClock(func() time.Time { return now })
	for i := range MaxAddrs {
		if wait := l.Failed(fmt.Sprintf("10.%d.%d.%d", i>>16, i>>8&255, i&255)); wait != 0 {
			t.Fatalf("the first wrong token of address %d: wait %v", i, wait)
		}
	}
	if wait := l.Failed("192.0.2.1"); wait != MaxBackoff {
		t.Errorf("a new address with the limiter full: wait %v, want %v", wait, MaxBackoff)
	}
	if got := l.Tracked(); got != MaxAddrs {
		t.Errorf("tracked %d addresses, want at most %d", got, MaxAddrs)
	}
	now = now.Add(Forget)
	if wait := l.Failed("192.0.2.1"); wait != 0 {
		t.Errorf("a new address once the others are forgotten: wait %v, want 0", wait)
	}
	if got := l.Tracked(); got != 1 {
		t.Errorf("tracked %d addresses after forgetting, want 1", got)
	}
}

func TestLimiterCountsAnIPv6ClientByItsPrefix(t *testing.T) {
	t.Parallel()
	for remote, want := range map[string]string{
		"192.0.2.7:1234":              "192.0.2.7",
		"[2001:db8:1:2:aaaa::1]:1234": "2001:db8:1:2::/64",
		"[2001:db8:1:2:bbbb::9]:80":   "2001:db8:1:2::/64",
		"[::ffff:192.0.2.7]:1234":     "192.0.2.7",
		"not an address":              "not an address",
	} {
		if got := ClientAddr(&http.Request{RemoteAddr: remote}); got != want {
			t.Errorf("ClientAddr(%q) = %q, want %q", remote, got, want)
		}
	}
}
