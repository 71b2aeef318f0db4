package tracing

import (
	"context"
	"testing"
)

// BenchmarkStartJob is a Worker's delivery span in a process without an OpenTelemetry SDK, the
// default: a span that records nothing, started and ended once per job.
func BenchmarkStartJob(b *testing.B) {
	t := New(nil)
	ctx := context.Background()
	b.ReportAllocs()
	for range b.N {
		_, span := t.StartJob(ctx, Process, "topic", "01JABCDEFGHJKMNPQRSTVWXYZ0", 1, nil, false)
		span.End()
	}
}
