package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/access"
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

// A right token always logs in: from an address that sent too many wrong ones too, so that
// no one can lock it out by sending wrong ones from its address.
func TestLoginThrottlesWrongTokensButNeverTheRightOne(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(c *Config) { c.Tokens = []string{"right-token"} })
	clock := newFakeClock()
	s.dash.logins.SetClock(clock.now)
	token := s.csrf("/login")
	try := func(secret string) answer {
		return s.post("/login", url.Values{csrfField: {token}, "token": {secret}, "next": {"/"}})
	}
	for i := range access.FreeFailures {
		if a := try("guess"); a.status != http.StatusSeeOther || !strings.Contains(a.header.Get("Location"), "failed=1") {
			t.Fatalf("wrong token %d: %d %q", i+1, a.status, a.header.Get("Location"))
		}
	}
	a := try("guess")
	wantStatus(t, "a wrong token after too many", a, http.StatusTooManyRequests)
	if a.header.Get("Retry-After") != "1" || !strings.Contains(a.body, "too many wrong tokens") || sessionCookieOf(a) != nil {
		t.Errorf("refusal: Retry-After %q, cookie %v:\n%s", a.header.Get("Retry-After"), sessionCookieOf(a), a.body)
	}
	if a := try("right-token"); a.status != http.StatusSeeOther || a.header.Get("Location") != "/" || sessionCookieOf(a) == nil {
		t.Fatalf("the right token while wrong ones are refused: %d %q, want a session", a.status, a.header.Get("Location"))
	}
	token = s.csrf("/login")
	clock.advance(time.Second)
	wantStatus(t, "a wrong token after the wait", try("guess"), http.StatusSeeOther)
	if a := try("guess"); a.status != http.StatusTooManyRequests || a.header.Get("Retry-After") != "2" {
		t.Errorf("the second wait: %d, Retry-After %q, want 429 and 2", a.status, a.header.Get("Retry-After"))
	}
	if !strings.Contains(s.log.String(), "a login refused after too many wrong tokens") {
		t.Errorf("the refusals are not logged:\n%s", s.log.String())
	}
	if strings.Contains(s.log.String(), "guess") || strings.Contains(s.log.String(), "right-token") {
		t.Errorf("a token is logged:\n%s", s.log.String())
	}
}

// A form refused for its CSRF token never had its token read: it is no wrong token.
func TestLoginWithoutCSRFIsNoTry(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(c *Config) { c.Tokens = []string{"right-token"} })
	s.csrf("/login")
	for range 2 * access.FreeFailures {
		wantStatus(t, "a login without its CSRF token", s.post("/login", url.Values{"token": {"guess"}}), http.StatusForbidden)
	}
	a := s.post("/login", url.Values{csrfField: {s.csrf("/login")}, "token": {"guess"}})
	if a.status != http.StatusSeeOther || !strings.Contains(a.header.Get("Location"), "failed=1") {
		t.Errorf("the first wrong token after forms without CSRF: %d %q, want the login page's wrong-token note", a.status, a.header.Get("Location"))
	}
}
