package access

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// A client address may send FreeFailures wrong tokens in a row; after each further one its
// wrong tokens are refused unread for Backoff at first, twice as long each time, at most
// MaxBackoff. A right token is never refused: it is checked before the limiter is asked, so
// that no one can lock a token out by sending wrong ones from its address. MaxAddrs bounds
// the addresses tracked; an address is forgotten Forget after its last wrong token.
const (
	FreeFailures = 5
	Backoff      = time.Second
	MaxBackoff   = time.Minute
	Forget       = 15 * time.Minute
	MaxAddrs     = 10_000
)

// Limiter slows down the guessing of tokens, per client address, for the API and the
// dashboard's /login alike. Its memory is bounded: at MaxAddrs addresses it tracks no new one,
// and refuses their wrong tokens as it refuses those of an address that sent too many.
type Limiter struct {
	now func() time.Time

	mu       sync.Mutex
	addrs    map[string]*failures
	lastScan time.Time
}

// failures are one address's wrong tokens in a row.
type failures struct {
	n     int
	last  time.Time // the last wrong token counted
	until time.Time // wrong tokens are refused unread before
}

// NewLimiter returns an empty Limiter.
func NewLimiter() *Limiter {
	return &Limiter{now: time.Now, addrs: map[string]*failures{}}
}

// SetClock makes l read the time from now; tests move it.
func (l *Limiter) SetClock(now func() time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.now = now
}

// Failed records a wrong token from addr. It returns 0 when the failure is to be answered as
// such (401, or the login page's "wrong token"), or how long addr must wait before its next
// wrong token is read: then the answer is 429 with Retry-After, and the failure is not counted.
func (l *Limiter) Failed(addr string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	f := l.addrs[addr]
	if f != nil && f.until.After(now) {
		return f.until.Sub(now)
	}
	if f == nil || now.Sub(f.last) >= Forget {
		if f == nil && len(l.addrs) >= MaxAddrs && !l.forget(now) {
			return MaxBackoff
		}
		f = &failures{}
		l.addrs[addr] = f
	}
	f.n++
	f.last = now
	if over := f.n - FreeFailures; over >= 0 {
		f.until = now.Add(min(Backoff<<min(over, 16), MaxBackoff))
	}
	return 0
}

// Tracked returns how many addresses l remembers.
func (l *Limiter) Tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.addrs)
}

// forget drops the addresses whose last wrong token is Forget old, at most once a second, and
// reports whether there is room for another; the caller holds l.mu.
func (l *Limiter) forget(now time.Time) bool {
	if now.Sub(l.lastScan) >= time.Second {
		l.lastScan = now
		for addr, f := range l.addrs {
			if now.Sub(f.last) >= Forget {
				delete(l.addrs, addr)
			}
		}
	}
	return len(l.addrs) < MaxAddrs
}

// ClientAddr is the address r came from, without its port, by which the Limiter counts: an
// IPv6 address stands for its /64, which one client commonly holds whole. Behind a proxy every
// client shares the proxy's: X-Forwarded-For, which any client can send, is not trusted.
func ClientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	if a.Is6() && !a.Is4In6() {
		p, _ := a.Prefix(64) // never fails for an IPv6 address
		return p.String()
	}
	return a.Unmap().String()
}
