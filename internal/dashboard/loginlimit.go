package dashboard

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// A client address may send loginFreeFailures wrong tokens in a row; after each further one it
// must wait, loginBackoff at first, twice as long each time, at most loginMaxBackoff, before
// /login takes a token from it again (a right one included). A right token clears its record;
// loginForget after its last wrong token, it is forgotten.
const (
	loginFreeFailures = 5
	loginBackoff      = time.Second
	loginMaxBackoff   = time.Minute
	loginForget       = 15 * time.Minute
	loginMaxAddrs     = 10_000 // addresses remembered before the forgotten ones are dropped
)

// loginLimiter slows down the guessing of tokens at /login, per client address.
type loginLimiter struct {
	now func() time.Time

	mu    sync.Mutex
	addrs map[string]*loginFailures
}

// loginFailures are one address's wrong tokens in a row (and the attempts under way).
type loginFailures struct {
	n     int
	last  time.Time // the last wrong token
	until time.Time // no token is taken before
}

func newLoginLimiter() *loginLimiter {
	return &loginLimiter{now: time.Now, addrs: map[string]*loginFailures{}}
}

// attempt returns how long addr must wait before /login takes a token from it; when it may try
// now (0), it counts the attempt as a wrong token until succeeded clears it, so that attempts
// sent at once cannot all pass before the first of them fails.
func (l *loginLimiter) attempt(addr string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	f := l.addrs[addr]
	if f != nil && f.until.After(now) {
		return f.until.Sub(now)
	}
	if f == nil || now.Sub(f.last) >= loginForget {
		if len(l.addrs) >= loginMaxAddrs {
			l.forget(now)
		}
		f = &loginFailures{}
		l.addrs[addr] = f
	}
	f.n++
	f.last = now
	if over := f.n - loginFreeFailures; over >= 0 {
		f.until = now.Add(min(loginBackoff<<min(over, 16), loginMaxBackoff))
	}
	return 0
}

// succeeded clears addr's record.
func (l *loginLimiter) succeeded(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.addrs, addr)
}

// forget drops the addresses whose last wrong token is loginForget old; the caller holds l.mu.
func (l *loginLimiter) forget(now time.Time) {
	for addr, f := range l.addrs {
		if now.Sub(f.last) >= loginForget {
			delete(l.addrs, addr)
		}
	}
}

// clientAddr is the address r came from, without its port. Behind a proxy every client shares
// the proxy's: the dashboard does not trust X-Forwarded-For, which any client can send.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
