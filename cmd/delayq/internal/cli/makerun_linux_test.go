package cli_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/delayq/delayq/internal/testwait"
)

// `make run` on a terminal, stopped with Ctrl-C: the server shuts down cleanly, and make exits
// 0 without reporting an error. The Ctrl-C is a real one: the byte 0x03 typed into a
// pseudo-terminal, whose line discipline sends SIGINT to the foreground process group.
func TestMakeRunCtrlC(t *testing.T) {
	t.Parallel()
	term, tty := openPTY(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := makeCommand(ctx, t, []string{"DELAYQ_BIN=" + filepath.Join(t.TempDir(), "delayq")},
		"run", "ARGS=--listen 127.0.0.1:0 --data-dir "+dataDir)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	// A session of its own with the terminal as its controlling terminal, as a login shell has.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close() // the children hold it now

	out := &testwait.Buffer{}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		buf := make([]byte, 4096)
		for {
			n, err := term.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				return // EIO once every process has closed the terminal
			}
		}
	}()
	testwait.For(t, 2*time.Minute, "the server's \"listening on\" line", func() bool {
		return listeningRe.MatchString(out.String())
	})
	if _, err := term.Write([]byte{3}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	err := cmd.Wait()
	<-readDone
	logs := out.String()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		t.Errorf("make run exited with %v after Ctrl-C, want status 0; output:\n%s", err, logs)
	case err != nil:
		t.Fatalf("make run: %v; output:\n%s", err, logs)
	}
	if strings.Contains(logs, "make: ***") || strings.Contains(logs, "Interrupt") {
		t.Errorf("make reported an error:\n%s", logs)
	}
	if !strings.Contains(logs, "shutting down") || !strings.Contains(logs, "msg=stopped") {
		t.Errorf("no clean shutdown in the server's logs:\n%s", logs)
	}
}

// openPTY opens a pseudo-terminal and returns its controlling side and the terminal itself.
func openPTY(t *testing.T) (term, tty *os.File) {
	t.Helper()
	term, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { term.Close() })
	var unlock int32
	if err := ioctl(term, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	var n uint32
	if err := ioctl(term, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		t.Fatalf("naming the pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return term, tty
}

func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	conn, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := conn.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(arg))
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// makeCommand returns `make args...` to run at the repository's root, in cleanEnv without the
// variables an outer make (`make test`) passes down, and with env on top. The test fails when
// make is not on PATH.
func makeCommand(ctx context.Context, t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	bin, err := exec.LookPath("make")
	if err != nil {
		t.Fatalf("make is not on PATH: %v", err)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = "../../../.."
	for _, kv := range cleanEnv() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	return cmd
}
