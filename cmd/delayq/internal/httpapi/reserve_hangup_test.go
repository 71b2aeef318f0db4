package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// flushThenWait is a ResponseWriter whose Flush sends the answer, then returns only once the
// client has hung up (or after 10 s): it puts the end of a one-shot client's exchange (read the
// answer, close the connection) before the handler's last look at its request.
type flushThenWait struct {
	http.ResponseWriter
	ctx context.Context
}

func (w flushThenWait) Flush() {
	w.ResponseWriter.(http.Flusher).Flush()
	select {
	case <-w.ctx.Done():
	case <-time.After(10 * time.Second):
	}
}

// A client that reads its reserve's answer and hangs up at once (curl, Python's urllib, any
// one-shot client) keeps its jobs: their leases stay valid, so that its ack succeeds and the
// job is not handed to anyone else.
func TestReserveOfAClientThatReadAndLeftKeepsTheLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.enqueue("oneshot", map[string]any{"id": "j", "ttr_ms": 60000})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.handler.ServeHTTP(flushThenWait{w, r.Context()}, r)
	}))
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	body := `{"max": 1}`
	req := "POST /v1/topics/oneshot/reserve HTTP/1.1\r\nHost: delayq\r\nContent-Type: application/json\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Jobs []apiv1.Job `json:"jobs"`
	}
	err = json.NewDecoder(resp.Body).Decode(&got)
	conn.Close() // the answer is read: hang up, as a one-shot client does
	if err != nil || resp.StatusCode != http.StatusOK || len(got.Jobs) != 1 {
		t.Fatalf("reserve: status %d, %+v, %v", resp.StatusCode, got, err)
	}

	lease := got.Jobs[0].Lease
	e.call("POST", "/v1/topics/oneshot/jobs/j/ack", map[string]any{"lease": lease}).want(t, http.StatusNoContent)
	if n := len(e.reserve("oneshot", nil)); n != 0 {
		t.Errorf("after the ack a reserve got %d jobs", n)
	}
}
