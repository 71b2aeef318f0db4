package testwait

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// Writes from several goroutines all arrive, whole, while the test reads the buffer; run with
// -race, the reads and writes show no data race.
func TestBuffer(t *testing.T) {
	t.Parallel()
	var b Buffer
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 100 {
				fmt.Fprintf(&b, "g%d line %d\n", g, i)
			}
		})
	}
	For(t, 10*time.Second, "the last line of g3", func() bool { return strings.Contains(b.String(), "g3 line 99\n") })
	wg.Wait()
	got := b.String()
	if n := strings.Count(got, "\n"); n != 400 {
		t.Fatalf("%d lines, want 400:\n%s", n, got)
	}
	for g := range 4 {
		for i := range 100 {
			if line := fmt.Sprintf("g%d line %d\n", g, i); !strings.Contains(got, line) {
				t.Errorf("%q is missing or torn", line)
			}
		}
	}
}
