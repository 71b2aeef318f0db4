package server

import (
	"net/http"
	"strings"
	"sync"
)

// inflight counts the requests in flight other than reserves, which may wait up to a minute
// for a job: at shutdown the server lets the others finish, then ends the reserves still
// waiting.
type inflight struct {
	next http.Handler

	mu       sync.Mutex
	n        int
	draining bool
	idle     chan struct{} // closed once draining and n is 0
}

func newInflight(next http.Handler) *inflight {
	return &inflight{next: next, idle: make(chan struct{})}
}

// ServeHTTP serves r, counting it unless it is a reserve.
func (f *inflight) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/reserve") {
		f.next.ServeHTTP(w, r)
		return
	}
	f.add(1)
	defer f.add(-1)
	f.next.ServeHTTP(w, r)
}

func (f *inflight) add(d int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n += d
	f.closeIfIdle()
}

// drained starts draining and returns a channel closed once no counted request is in flight.
func (f *inflight) drained() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.draining = true
	f.closeIfIdle()
	return f.idle
}

func (f *inflight) closeIfIdle() {
	if f.draining && f.n == 0 {
		select {
		case <-f.idle:
		default:
			close(f.idle)
		}
	}
}
