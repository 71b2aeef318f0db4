package httpapi

import "testing"

func TestWireField(t *testing.T) {
	for in, want := range map[string]string{
		"delay": "delay_ms", "ttr": "ttr_ms", "wait": "wait_ms", "backoff": "backoff_ms",
		"backoff[3]": "backoff_ms[3]", "ids[1]": "ids[1]", "priority": "priority", "max_bytes": "max_bytes",
	} {
		if got := wireField(in); got != want {
			t.Errorf("wireField(%q) = %q, want %q", in, got, want)
		}
	}
}
