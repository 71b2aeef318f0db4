package httpapi

import (
	"strings"
	"testing"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// BenchmarkDecodeStrict decodes single-job enqueue bodies.
func BenchmarkDecodeStrict(b *testing.B) {
	bodies := []struct{ name, body string }{
		{"plain", `{"body":"` + strings.Repeat("x", 98) + `","delay_ms":3600000}`},
		{"headers", `{"id":"order-1234","body":{"order":1234,"items":["a","b"]},"delay_ms":3600000,` +
			`"headers":{"content-type":"application/json","x-request-id":"9f2c"},` +
			`"callback_url":"https://example.com/hooks/delayq","max_retries":5}`},
	}
	for _, c := range bodies {
		b.Run(c.name, func(b *testing.B) {
			data := []byte(c.body)
			b.ReportAllocs()
			for b.Loop() {
				var q apiv1.EnqueueRequest
				if err := decodeStrict(data, &q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
