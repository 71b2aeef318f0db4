package tlsreload

import (
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/certtest"
	"github.com/delayq/delayq/internal/testwait"
)

// A server on a Pair speaks HTTP/2 over TLS, and takes a new certificate written over its
// files without a restart.
func TestPairServesANewCertificateWithoutARestart(t *testing.T) {
	t.Parallel()
	ca := certtest.NewCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	ca.Issue(100, certFile, keyFile)
	pair, err := Load(certFile, keyFile, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{TLSConfig: pair.Config(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: ca.Pool}, ForceAttemptHTTP2: true, DisableKeepAlives: true,
	}}
	serial := func() int64 {
		t.Helper()
		resp, err := client.Get("https://" + ln.Addr().String() + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.ProtoMajor != 2 {
			t.Errorf("protocol %s, want HTTP/2", resp.Proto)
		}
		return resp.TLS.PeerCertificates[0].SerialNumber.Int64()
	}
	if got := serial(); got != 100 {
		t.Fatalf("serial %d, want 100", got)
	}
	ca.Issue(200, certFile, keyFile)
	testwait.For(t, 10*time.Second, "the new certificate", func() bool { return serial() == 200 })
}
