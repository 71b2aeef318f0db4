package webhook

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/testwait"
	"github.com/delayq/delayq/internal/tracing"
)

// A push job enqueued in a trace is delivered in it: the callback request carries a
// traceparent of the same trace (its parent the delivery's span when the process records spans,
// else the context the job brought).
func TestCallbackCarriesTheJobsTrace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t, nil, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	incoming := "00-" + traceID + "-00f067aa0ba902b7-01"
	ctx := tracing.Extract(testContext(t), map[string]string{"traceparent": incoming})
	job, err := e.c.Enqueue(ctx, "orders", delayq.Spec{ID: "o-1", Body: []byte("{}"), Format: delayq.FormatJSON, CallbackURL: rcv.url("/hook")})
	if err != nil {
		t.Fatal(err)
	}
	if job.Headers["traceparent"] != incoming {
		t.Fatalf("job headers %v, want traceparent %s", job.Headers, incoming)
	}
	e.start(t, Config{})
	testwait.For(t, 10*time.Second, "the delivery", func() bool { return rcv.count() >= 1 })
	got := rcv.deliveries()[0].header.Get("traceparent")
	if !strings.HasPrefix(got, "00-"+traceID+"-") {
		t.Fatalf("callback traceparent %q, want one in trace %s", got, traceID)
	}
}
