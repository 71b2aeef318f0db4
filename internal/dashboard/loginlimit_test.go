package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a clock a test moves while a server reads it.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }
func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Unix(1_000_000, 0).UnixNano())
	return c
}

func TestLoginThrottlesWrongTokens(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(c *Config) { c.Tokens = []string{"right-token"} })
	clock := newFakeClock()
	s.dash.logins.now = clock.now
	token := s.csrf("/login")
	try := func(secret string) answer {
		return s.post("/login", url.Values{csrfField: {token}, "token": {secret}, "next": {"/"}})
	}
	for i := range loginFreeFailures {
		if a := try("guess"); a.status != http.StatusSeeOther || !strings.Contains(a.header.Get("Location"), "failed=1") {
			t.Fatalf("wrong token %d: %d %q", i+1, a.status, a.header.Get("Location"))
		}
	}
	for _, secret := range []string{"guess", "right-token"} {
		a := try(secret)
		wantStatus(t, "a token after too many wrong ones", a, http.StatusTooManyRequests)
		if a.header.Get("Retry-After") != "1" || !strings.Contains(a.body, "too many wrong tokens") || sessionCookieOf(a) != nil {
			t.Errorf("refusal: Retry-After %q, cookie %v:\n%s", a.header.Get("Retry-After"), sessionCookieOf(a), a.body)
		}
	}
	clock.advance(time.Second)
	wantStatus(t, "a wrong token after the wait", try("guess"), http.StatusSeeOther)
	if a := try("guess"); a.status != http.StatusTooManyRequests || a.header.Get("Retry-After") != "2" {
		t.Errorf("the second wait: %d, Retry-After %q, want 429 and 2", a.status, a.header.Get("Retry-After"))
	}
	clock.advance(2 * time.Second)
	if a := try("right-token"); a.status != http.StatusSeeOther || sessionCookieOf(a) == nil {
		t.Fatalf("the right token after the wait: %d", a.status)
	}
	if !strings.Contains(s.log.String(), "a login refused after too many wrong tokens") {
		t.Errorf("the refusals are not logged:\n%s", s.log.String())
	}
}

func TestLoginLimiterByAddress(t *testing.T) {
	t.Parallel()
	l := newLoginLimiter()
	clock := newFakeClock()
	l.now = clock.now
	for i := range loginFreeFailures {
		if w := l.attempt("192.0.2.1"); w != 0 {
			t.Fatalf("attempt %d waits %v", i+1, w)
		}
	}
	for range 10 { // each after waiting as long as told
		for w := l.attempt("192.0.2.1"); w != 0; w = l.attempt("192.0.2.1") {
			clock.advance(w)
		}
	}
	if w := l.attempt("192.0.2.1"); w != loginMaxBackoff {
		t.Errorf("after many wrong tokens the wait is %v, want at most %v", w, loginMaxBackoff)
	}
	if w := l.attempt("192.0.2.2"); w != 0 {
		t.Errorf("another address waits %v", w)
	}
	clock.advance(loginForget)
	l.attempt("192.0.2.1")
	if w := l.attempt("192.0.2.1"); w != 0 {
		t.Errorf("an attempt long after the others waits %v: they are forgotten", w)
	}
	l.succeeded("192.0.2.1")
	l.succeeded("192.0.2.2")
	if len(l.addrs) != 0 {
		t.Errorf("right tokens leave %d records", len(l.addrs))
	}
	for i := range loginMaxAddrs {
		l.attempt(fmt.Sprintf("10.%d.%d.1", i/256, i%256))
	}
	clock.advance(loginForget)
	l.attempt("192.0.2.3")
	if len(l.addrs) != 1 {
		t.Errorf("%d addresses remembered once the others are old, want 1", len(l.addrs))
	}
}

// Attempts sent at once count before any of them fails: no more than the free ones pass.
func TestLoginLimiterCountsAttemptsUnderWay(t *testing.T) {
	t.Parallel()
	l := newLoginLimiter()
	var passed atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if l.attempt("192.0.2.1") == 0 {
				passed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := passed.Load(); n != loginFreeFailures {
		t.Errorf("%d of 50 attempts at once passed, want %d", n, loginFreeFailures)
	}
}
