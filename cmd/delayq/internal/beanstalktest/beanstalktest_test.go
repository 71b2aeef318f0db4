package beanstalktest

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestStartAnswersAndStopsAtCleanup checks that a started server speaks the protocol, keeps its
// binlog in Dir, and is gone once the test's cleanups have run.
func TestStartAnswersAndStopsAtCleanup(t *testing.T) {
	var pid int
	t.Run("server", func(t *testing.T) {
		s := Start(t, WithBinlog())
		pid = s.Pid()
		conn, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Write([]byte("put 0 0 1 2\r\nhi\r\n")); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil || line != "INSERTED 1\r\n" {
			t.Fatalf("put: got %q, %v; want INSERTED 1", line, err)
		}
		logs, _ := filepath.Glob(filepath.Join(s.Dir, "binlog.*"))
		if len(logs) == 0 {
			t.Errorf("no binlog file in %s", s.Dir)
		}
	})
	// The process is killed and reaped by the cleanup: signal 0 finds no such process.
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("beanstalkd pid %d still running after cleanup", pid)
	}
}

// TestStartTwiceGivesTwoServers checks that servers get distinct ports.
func TestStartTwiceGivesTwoServers(t *testing.T) {
	a, b := Start(t), Start(t)
	if a.Addr() == b.Addr() {
		t.Fatalf("both servers on %s", a.Addr())
	}
	if _, err := os.Stat(a.Dir); err != nil {
		t.Fatal(err)
	}
}
