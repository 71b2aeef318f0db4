//go:build faults

package faults_test

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/faults"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// startServer runs `delayq server` against the harness's Redis and waits until it is ready.
func (h *harness) startServer(name, listen string) *agent {
	h.t.Helper()
	p := h.startBin(nil, name, serverBin, "server",
		"--listen", listen, "--redis", h.redisURL, "--namespace", h.ns,
		"--webhook-secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "--webhook-allow-cidr", "127.0.0.0/8",
		"--log-level", "warn")
	testwait.For(h.t, 30*time.Second, name+" to be ready", func() bool {
		resp, err := http.Get("http://" + listen + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
}

// Scenario 4: kill -9 the delayq server under load (HTTP producers, HTTP pull consumers,
// webhook deliveries), then start it again. Nothing acknowledged is lost; only requests and
// deliveries in flight at the kill are repeated; the service is back as soon as the process is.
func TestKillServer(t *testing.T) {
	if serverBuildErr != nil {
		t.Fatal(serverBuildErr)
	}
	srv := redistest.Standalone(t, redistest.WithAppendOnly("always"))
	h := newHarness(t, "redis://"+srv.Addr, srv.Client(t), delayq.Config{})
	listen := "127.0.0.1:" + freePort(t)
	hook := "127.0.0.1:" + freePort(t)
	base := "http://" + listen
	server1 := h.startServer("server1", listen)
	receiver := h.start("webhook", "webhook", "-listen", hook)
	n := scale(4000, 40000)
	common := []string{"-server", base, "-n", itoa(n), "-batch", "20", "-concurrency", "2",
		"-rate", itoa(n / 12), "-spread", "1s", "-ttr", "3s", "-backoff", "0"}
	pull := h.start("pull-producer", "http-produce", append(common, "-prefix", "pull")...)
	push := h.start("push-producer", "http-produce", append(common, "-prefix", "push", "-callback", "http://"+hook+"/hook")...)
	consumer := h.start("consumer", "http-work", "-server", base, "-concurrency", "20")
	testwait.For(h.t, time.Minute, "load to build up", func() bool {
		return consumer.count(faults.Acked) >= n/20 && receiver.count(faults.Delivered) >= n/20
	})
	killAt := h.kill(server1)
	h.startServer("server2", listen)
	upAt := time.Now().UnixMilli()

	var enq, ack, hooked int64
	testwait.For(h.t, 30*time.Second, "the service to recover", func() bool {
		if enq == 0 {
			enq = max(firstAfter(pull, faults.Enqueued, upAt), firstAfter(push, faults.Enqueued, upAt))
		}
		if ack == 0 {
			ack = firstAfter(consumer, faults.Acked, upAt)
		}
		if hooked == 0 {
			hooked = firstAfter(receiver, faults.Delivered, upAt)
		}
		return enq != 0 && ack != 0 && hooked != 0
	})
	rec := time.Duration(max(enq, ack, hooked)-upAt) * time.Millisecond
	h.finished(pull, 2*time.Minute)
	h.finished(push, 2*time.Minute)
	h.drain(2*time.Minute, 0)
	r := h.check(faults.Rules{Faults: []faults.Window{{Name: "kill server", Start: killAt, End: upAt}}}, false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s, err := h.c.Stats(ctx, h.topic); err == nil && s.Dead > 0 {
		t.Errorf("%d jobs dead", s.Dead)
	}
	record(t, figures(r, map[string]any{
		"down_ms": upAt - killAt, "recovery_ms": rec.Milliseconds(),
		"webhook_deliveries": receiver.count(faults.Delivered),
		"enqueue_errors":     pull.count(faults.EnqueueErr) + push.count(faults.EnqueueErr),
	}))
}
