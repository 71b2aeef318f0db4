package redistest

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// RunWithServer starts a redis-server for a whole test binary, stores it in *srv, runs the
// tests and stops it. It is for TestMain of packages whose examples need a server: an Example
// has no *testing.T to start one with. It returns m.Run's exit code.
func RunWithServer(m *testing.M, srv **Server, opts ...Option) int {
	tb := &mainTB{}
	defer tb.cleanup()
	*srv = Standalone(tb, opts...)
	return m.Run()
}

// NewClient returns a new go-redis client to the server; the caller closes it.
func (s *Server) NewClient() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.Addr})
}

// mainTB is the part of testing.TB that starting a server needs, for use outside any test.
// The embedded interface is nil: a method not defined here must never be called.
type mainTB struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
}

func (tb *mainTB) Helper() {}

func (tb *mainTB) Cleanup(f func()) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.cleanups = append(tb.cleanups, f)
}

func (tb *mainTB) TempDir() string {
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (tb *mainTB) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

func (tb *mainTB) Errorf(format string, args ...any) { tb.Logf(format, args...) }

func (tb *mainTB) Fatalf(format string, args ...any) {
	tb.Logf(format, args...)
	tb.cleanup()
	os.Exit(1)
}

func (tb *mainTB) Fatal(args ...any) { tb.Fatalf("%s", fmt.Sprint(args...)) }

func (tb *mainTB) cleanup() {
	tb.mu.Lock()
	fs := tb.cleanups
	tb.cleanups = nil
	tb.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
