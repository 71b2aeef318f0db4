//go:build unix

package redisproc

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/childproc"
)

// startOn starts redis-server on port with its files in dir and kills it when the test ends.
func startOn(t *testing.T, port int, dir string, extra ...string) (*childproc.Process, string) {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, "out.log"))
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--dir", dir}, extra...)
	p, err := childproc.Start(childproc.Options{Bin: bin, Args: args, Output: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill(10 * time.Second) })
	return p, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
