package cli_test

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/cli"
)

// A PostgreSQL address that takes connections and never answers (a hung server, or a proxy
// in front of none): the server gives up with a clear error instead of hanging at start, and
// the error holds no password.
func TestServerGivesUpOnASilentArchive(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	var out, errOut bytes.Buffer
	err = cli.Run(ctx, []string{"server", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(),
		"--archive", "postgres://delayq:s3cret-pw@" + ln.Addr().String() + "/history"},
		getenv(nil), &out, &errOut)
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "--archive") {
		t.Fatalf("server = %v after %v; want an --archive error", err, took)
	}
	if took > 30*time.Second {
		t.Errorf("the server gave up after %v", took)
	}
	if s := err.Error() + out.String() + errOut.String(); strings.Contains(s, "s3cret-pw") {
		t.Errorf("the password leaked: %s", s)
	}
}

// A password given as a parameter of the archive URL (?password=) stays out of the error and
// the logs as one in the user part does.
func TestServerHidesAnArchivePasswordParameter(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there: the connection is refused
	var out, errOut bytes.Buffer
	err = cli.Run(context.Background(), []string{"server", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(),
		"--archive", "postgres://delayq@" + addr + "/history?sslmode=disable&password=s3cret-pw"},
		getenv(nil), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "--archive") {
		t.Fatalf("server = %v; want an --archive error", err)
	}
	if s := err.Error() + out.String() + errOut.String(); strings.Contains(s, "s3cret-pw") {
		t.Errorf("the password leaked: %s", s)
	}
}
