package httpapi

import "testing"

func TestWireField(t *testing.T) {
	for in, want := range map[string]string{
		"delay": "delay_ms", "ttr": "ttr_ms", "wait": "wait_ms", "backoff": "backoff_ms",
		"backoff[3]": "backoff_ms[3]", "ids[1]": "ids[1]", "priority": "priority", "max_bytes": "max_bytes",
		"job.ttr": "job.ttr_ms", "job.backoff[0]": "job.backoff_ms[0]", "job.body_base64": "job.body_base64",
		"unique_for": "unique_for_ms",
	} {
		if got := wireField(in); got != want {
			t.Errorf("wireField(%q) = %q, want %q", in, got, want)
		}
	}
}
