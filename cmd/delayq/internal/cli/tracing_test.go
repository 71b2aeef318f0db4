package cli_test

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver collects the spans OTLP/HTTP exporters send it.
type otlpReceiver struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				o.services = append(o.services, a.Value.GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (o *otlpReceiver) span(name string) *tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range o.spans {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// The server configures the OpenTelemetry SDK from the standard variables: with an OTLP/HTTP
// endpoint set, the spans of a request that came with a traceparent reach it in that trace.
func TestServerExportsTracesOverOTLP(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd, addr, logs, _ := startBinaryServer(ctx, t, bin, append(cleanEnv(), "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_BSP_SCHEDULE_DELAY=50"))

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/topics/orders/jobs", strings.NewReader(`{"body":{"n":1}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("enqueue: status %d", resp.StatusCode)
	}
	// Stopping flushes the spans not yet sent.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("server exited with %v; output:\n%s", err, logs)
	}

	server := recv.span("POST /v1/topics/{topic}/jobs")
	send := recv.span("send orders")
	if server == nil || send == nil {
		t.Fatalf("spans received: %d; want the request's and the enqueue's; output:\n%s", len(recv.spans), logs)
	}
	if hex.EncodeToString(server.TraceId) != traceID || hex.EncodeToString(server.ParentSpanId) != parentID {
		t.Errorf("request span in trace %x under %x, want %s under %s", server.TraceId, server.ParentSpanId, traceID, parentID)
	}
	if hex.EncodeToString(send.TraceId) != traceID || string(send.ParentSpanId) != string(server.SpanId) {
		t.Errorf("send span in trace %x under %x, want the request span %x", send.TraceId, send.ParentSpanId, server.SpanId)
	}
	if send.Kind != tracepb.Span_SPAN_KIND_PRODUCER {
		t.Errorf("send span kind %v, want producer", send.Kind)
	}
	if len(recv.services) == 0 || recv.services[0] != "delayq" {
		t.Errorf("service names %v, want delayq", recv.services)
	}
}

// A job enqueued over HTTP with a traceparent is delivered to its callback in the same trace,
// and a pull consumer finds the trace context in the reserved job's headers.
func TestTraceparentFromEnqueueToWebhookAndReserve(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.Header.Get("traceparent"):
		default:
		}
	}))
	t.Cleanup(hook.Close)
	secret, _ := runCLI(t, nil, "webhook-secret")
	s := startServer(t, nil, "--webhook-secret", strings.TrimSpace(secret), "--webhook-allow-cidr", "127.0.0.0/8")
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	incoming := "00-" + traceID + "-00f067aa0ba902b7-01"
	post := func(topic, body string) {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/topics/"+topic+"/jobs", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("traceparent", incoming)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("enqueue to %s: status %d", topic, resp.StatusCode)
		}
	}
	post("pushed", `{"body":1,"callback_url":"`+hook.URL+`/cb"}`)
	post("pulled", `{"body":1}`)
	select {
	case tp := <-got:
		if !strings.HasPrefix(tp, "00-"+traceID+"-") {
			t.Errorf("the webhook request's traceparent %q, want one in trace %s", tp, traceID)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no webhook request")
	}
	var res struct {
		Jobs []struct {
			Headers map[string]string `json:"headers"`
		} `json:"jobs"`
	}
	s.mustJSON(t, &res, "reserve", "pulled")
	if len(res.Jobs) != 1 || !strings.HasPrefix(res.Jobs[0].Headers["traceparent"], "00-"+traceID+"-") {
		t.Fatalf("reserved %+v, want a job whose headers carry trace %s", res.Jobs, traceID)
	}
}
