package cli

import (
	"runtime/debug"
	"testing"
)

// TestServerGCPercent checks that the server collects garbage at serverGCPercent unless GOGC
// is set, and leaves a GOGC setting alone.
func TestServerGCPercent(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	setGCPercent(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != serverGCPercent {
		t.Errorf("GOGC unset: GC percent %d, want %d", got, serverGCPercent)
	}
	setGCPercent(func(k string) string {
		if k == "GOGC" {
			return "50"
		}
		return ""
	})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC set: GC percent changed to %d; the runtime applies GOGC itself", got)
	}
}
