package webhook

import (
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/delayq/delayq"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
	"github.com/delayq/delayq/internal/testwait"
)

func TestDeliverOnTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t, e.rdb, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	const body = `{"order": 42, "note": "<&>"}`
	job := e.enqueue(t, "orders", delayq.Spec{
		ID: "o-42", Body: []byte(body), Format: delayq.FormatJSON,
		Delay: 200 * time.Millisecond, CallbackURL: rcv.url("/hook"),
		Headers: map[string]string{"TraceParent": "00-ab-cd-01"},
	})
	m := newMetrics()
	e.start(t, Config{Metrics: m})

	testwait.For(t, 10*time.Second, "the delivery", func() bool { return rcv.count() >= 1 })
	testwait.For(t, 5*time.Second, "the ack", func() bool { return e.get(t, "orders", "o-42") == nil })
	got := rcv.deliveries()
	if len(got) != 1 {
		t.Fatalf("%d deliveries, want 1", len(got))
	}
	d := got[0]

	// Never early by the Redis clock, and on time.
	runAt, err := time.Parse(apiv1.TimeLayout, d.str(t, "run_at"))
	if err != nil {
		t.Fatalf("run_at: %v", err)
	}
	if !runAt.Equal(job.RunAt) || runAt.Sub(job.CreatedAt) != 200*time.Millisecond {
		t.Errorf("run_at %v, want %v (created %v + 200ms)", runAt, job.RunAt, job.CreatedAt)
	}
	if d.redisAt.IsZero() || d.redisAt.Before(runAt) {
		t.Errorf("delivered at %v by the Redis clock, before its run_at %v", d.redisAt, runAt)
	}
	if late := d.redisAt.Sub(runAt); late > 2*time.Second {
		t.Errorf("delivered %v after its run_at", late)
	}

	// The payload.
	if d.path != "/hook" || d.str(t, "topic") != "orders" || d.str(t, "id") != "o-42" || d.attempt(t) != 1 {
		t.Errorf("delivered to %s: %s", d.path, d.body)
	}
	var gotBody, wantBody any
	_ = json.Unmarshal(d.fields["body"], &gotBody)
	_ = json.Unmarshal([]byte(body), &wantBody)
	if diff := cmp.Diff(wantBody, gotBody); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	if _, ok := d.fields["body_base64"]; ok {
		t.Errorf("a JSON job came with body_base64: %s", d.body)
	}
	var gotHeaders map[string]string
	_ = json.Unmarshal(d.fields["headers"], &gotHeaders)
	if diff := cmp.Diff(map[string]string{"traceparent": "00-ab-cd-01"}, gotHeaders); diff != "" {
		t.Errorf("the job's headers in the payload (-want +got):\n%s", diff)
	}

	// The headers, and a signature that a Standard Webhooks receiver accepts.
	for name, want := range map[string]string{"content-type": "application/json", "user-agent": "delayq"} {
		if got := d.header.Get(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if id := d.header.Get("webhook-id"); !strings.HasPrefix(id, "msg_") {
		t.Errorf("webhook-id %q", id)
	}
	if err := verifyStandardWebhook(testSecret, d.header, d.body, time.Now()); err != nil {
		t.Errorf("signature: %v", err)
	}
	if err := verifyStandardWebhook("whsec_"+strings.Repeat("A", 32), d.header, d.body, time.Now()); err == nil {
		t.Error("the signature verifies with another secret")
	}

	testwait.For(t, 5*time.Second, "the metrics", func() bool { return counter(t, m.Acked, "orders") == 1 })
	for _, c := range []struct {
		name string
		got  float64
	}{
		{"webhooks ok", counter(t, m.Webhooks, "orders", outcomeOK)},
		{"delivered push", counter(t, m.Delivered, "orders", "push")},
	} {
		if c.got != 1 {
			t.Errorf("%s = %v, want 1", c.name, c.got)
		}
	}
}

func TestDeliveryOutcomes(t *testing.T) {
	t.Parallel()
	status := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
	}
	tests := []struct {
		name     string
		handler  http.HandlerFunc
		spec     delayq.Spec // CallbackURL is set by the test
		url      func(t *testing.T, rcv *receiver) string
		guard    func(callback string) *Guard // nil: loopback allowed
		attempts int                          // attempts made: the receiver's requests unless noRequest
		gone     bool                         // acked; else dead
		lastErr  string
		outcome  string
		// noRequest: no attempt may reach the receiver.
		noRequest bool
		// check inspects the requests the receiver got.
		check func(t *testing.T, got []delivery)
	}{
		{
			name: "2xx acks", handler: status(http.StatusAccepted),
			attempts: 1, gone: true, outcome: outcomeOK,
		},
		{
			name: "500 is retried by backoff, then dead", handler: status(http.StatusInternalServerError),
			spec:     delayq.Spec{MaxRetries: 2, Backoff: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}},
			attempts: 3, lastErr: "webhook: status 500", outcome: outcomeHTTPError,
			check: func(t *testing.T, got []delivery) {
				for i, d := range got {
					if d.attempt(t) != i+1 {
						t.Errorf("request %d has attempt %d", i, d.attempt(t))
					}
					if d.header.Get("webhook-id") != got[0].header.Get("webhook-id") {
						t.Errorf("request %d has webhook-id %q, the first %q", i, d.header.Get("webhook-id"), got[0].header.Get("webhook-id"))
					}
					if err := verifyStandardWebhook(testSecret, d.header, d.body, time.Now()); err != nil {
						t.Errorf("request %d: %v", i, err)
					}
				}
				for i, backoff := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond} {
					// Redis counts whole milliseconds; allow for the rounding.
					if gap := got[i+1].at.Sub(got[i].at); gap < backoff-2*time.Millisecond {
						t.Errorf("retry %d came %v after the attempt before it, want at least %v", i+1, gap, backoff)
					}
				}
			},
		},
		{
			name: "410 is dead at once", handler: status(http.StatusGone),
			attempts: 1, lastErr: "410", outcome: outcomeGone,
		},
		{
			name: "no answer within the TTR is a timeout",
			handler: func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
			},
			spec:     delayq.Spec{TTR: 300 * time.Millisecond, NoRetries: true},
			attempts: 1, lastErr: "timeout", outcome: outcomeTimeout,
		},
		{
			name: "a redirect is not followed",
			handler: func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/hook" {
					http.Redirect(w, r, "/elsewhere", http.StatusFound)
				}
			},
			spec:     delayq.Spec{NoRetries: true},
			attempts: 1, lastErr: "status 302", outcome: outcomeHTTPError,
			check: func(t *testing.T, got []delivery) {
				if got[0].path != "/hook" {
					t.Errorf("the request went to %s", got[0].path)
				}
			},
		},
		{
			name: "a refused connection",
			url: func(t *testing.T, _ *receiver) string {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				addr := ln.Addr().String()
				ln.Close()
				return "http://" + addr + "/hook"
			},
			spec:     delayq.Spec{NoRetries: true},
			attempts: 1, lastErr: "connection refused", outcome: outcomeRefused, noRequest: true,
		},
		{
			name: "the guard refuses at delivery", handler: status(http.StatusOK),
			guard:    func(string) *Guard { return NewGuard(nil) },
			spec:     delayq.Spec{NoRetries: true},
			attempts: 1, lastErr: "forbidden address: 127.0.0.1 is loopback", outcome: outcomeForbidden, noRequest: true,
		},
		{
			name: "the guard refuses a name rebound to loopback", handler: status(http.StatusOK),
			url: func(t *testing.T, rcv *receiver) string {
				_, port, _ := net.SplitHostPort(rcv.srv.Listener.Addr().String())
				return "http://rebind.test:" + port + "/hook"
			},
			guard: func(callback string) *Guard {
				r := &fakeResolver{hosts: map[string][]netip.Addr{"rebind.test": addrs("93.184.216.34")}, next: addrs("127.0.0.1")}
				g := NewGuard(nil, WithResolver(r))
				if err := g.CheckURL(testContext(t), callback); err != nil {
					t.Fatalf("CheckURL at enqueue: %v", err)
				}
				return g
			},
			spec:     delayq.Spec{NoRetries: true},
			attempts: 1, lastErr: "rebind.test resolves to 127.0.0.1", outcome: outcomeForbidden, noRequest: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			rcv := newReceiver(t, nil, tt.handler)
			spec := tt.spec
			spec.ID, spec.Body, spec.Format = "j1", []byte(`{"n":1}`), delayq.FormatJSON
			spec.CallbackURL = rcv.url("/hook")
			if tt.url != nil {
				spec.CallbackURL = tt.url(t, rcv)
			}
			var g *Guard
			if tt.guard != nil {
				g = tt.guard(spec.CallbackURL)
			}
			e.enqueue(t, "t", spec)
			m := newMetrics()
			e.start(t, Config{Guard: g, Metrics: m})

			var job *delayq.Job
			testwait.For(t, 15*time.Second, "the job to be acked or dead", func() bool {
				job = e.get(t, "t", "j1")
				return job == nil || job.State == delayq.StateDead
			})
			switch {
			case tt.gone && job != nil:
				t.Fatalf("job is %s after %d attempts (%q), want acked", job.State, job.Attempts, job.LastError)
			case !tt.gone && job == nil:
				t.Fatal("job was acked, want dead")
			case job != nil:
				if job.Attempts != tt.attempts || !strings.Contains(job.LastError, tt.lastErr) {
					t.Errorf("dead after %d attempts with last_error %q, want %d attempts and %q",
						job.Attempts, job.LastError, tt.attempts, tt.lastErr)
				}
			}
			got := rcv.deliveries()
			wantRequests := tt.attempts
			if tt.noRequest {
				wantRequests = 0
			}
			if len(got) != wantRequests {
				t.Fatalf("the receiver got %d requests, want %d", len(got), wantRequests)
			}
			if tt.check != nil {
				tt.check(t, got)
			}
			testwait.For(t, 5*time.Second, "the metrics", func() bool {
				return counter(t, m.Webhooks, "t", tt.outcome) == float64(tt.attempts)
			})
		})
	}
}
