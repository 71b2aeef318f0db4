package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/httpapi"
	"github.com/delayq/delayq/internal/childproc"
)

// commandPath is the import path of the delayq command, which serves `delayq server`.
const commandPath = "github.com/delayq/delayq/cmd/delayq"

// serverBinary returns the path of the running executable when it is the delayq command, so
// that the http scenario can run `delayq server` as a process of its own; "" otherwise, such as
// in a test binary.
func serverBinary() string {
	info, ok := debug.ReadBuildInfo()
	if !ok || info.Path != commandPath {
		return ""
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return exe
}

// httpTarget is the server the http scenario drives.
type httpTarget struct {
	base string // http://host:port
	// pid is the server's process, whose CPU time /proc tells; 0 when it cannot be told apart
	// from the benchmark's own.
	pid int
	// noCPU says why the server's CPU time is not measured, when pid is 0.
	noCPU string
	stop  func()
	// exited reports, once the server process has ended, how, with its last log lines.
	exited func() error
}

// httpServer returns the server the http scenario measures, with a note on r saying which:
// the server at env.HTTP; else `delayq server` run from env.Server as a process of its own, on
// env.RedisURL with its default settings but the namespace of c; else an in-process server on
// dc. stop must be called.
func httpServer(ctx context.Context, env *Env, c Contestant, dc *delayq.Client, r *Result) (*httpTarget, error) {
	none := func() error { return nil }
	switch {
	case env.HTTP != "":
		t := &httpTarget{base: strings.TrimRight(env.HTTP, "/"), pid: env.HTTPPid, stop: func() {}, exited: none}
		if t.pid == 0 {
			t.noCPU = "the server at --http has no --http-pid"
		} else if _, err := processCPU(t.pid); err != nil {
			return nil, fmt.Errorf("the CPU time of the server at --http, pid %d: %w", t.pid, err)
		}
		r.note("the server at %s, on whichever Redis it was started with", t.base)
		return t, nil
	case env.Server != "" && env.RedisURL != "":
		var ns string
		if d, ok := c.(*Delayq); ok {
			ns = d.Config.Namespace
		}
		p, err := startServer(ctx, env.Server, env.RedisURL, ns)
		if err != nil {
			return nil, err
		}
		settings := "its default settings"
		if ns != "" {
			settings += fmt.Sprintf(" but --namespace %s", ns)
		}
		r.note("`delayq server` as a process of its own (pid %d) on the benchmark's Redis, with %s", p.proc.Pid(), settings)
		return &httpTarget{base: p.base, pid: p.proc.Pid(), stop: p.stop, exited: p.exitErr}, nil
	}
	h, err := httpapi.New(httpapi.Config{Client: dc, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	r.note("an in-process server on %s on the benchmark's Redis (no delayq binary to run: see --server-bin)", base)
	return &httpTarget{base: base, noCPU: "the server runs inside the benchmark's process", stop: func() { _ = srv.Close() }, exited: none}, nil
}

// cpu returns the CPU time (user and system) the server has used so far, or false when it is
// not measured.
func (t *httpTarget) cpu() (time.Duration, bool) {
	if t.pid == 0 {
		return 0, false
	}
	d, err := processCPU(t.pid)
	return d, err == nil
}

// clockTick is the unit of the CPU times in /proc/<pid>/stat: USER_HZ, 100 on every Linux
// architecture Go runs on.
const clockTick = 10 * time.Millisecond

// processCPU reads utime + stime of process pid, all its threads, from /proc/<pid>/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces; the fields after it
	// start with field 3, the state, so that utime (14) and stime (15) are 11 and 12.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command name", pid, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// serverProcess is a `delayq server` child process.
type serverProcess struct {
	base string
	proc *childproc.Process
	log  *serverLog
	once sync.Once
}

// serverStopTimeout bounds a server's graceful shutdown before it is killed.
const serverStopTimeout = 15 * time.Second

// startServer runs bin as `delayq server` on redisURL (and namespace ns, unless empty) on a
// loopback port the system picks, and waits until it logs the address it listens on. The server
// is stopped by stop, or when ctx ends; the kernel kills it should this process die first.
func startServer(ctx context.Context, bin, redisURL, ns string) (*serverProcess, error) {
	args := []string{"server", "--listen", "127.0.0.1:0"}
	if ns != "" {
		args = append(args, "--namespace", ns)
	}
	log := newServerLog()
	proc, err := childproc.Start(childproc.Options{
		Bin:  bin,
		Args: args,
		// The server's settings are its defaults and the flags above: none comes from this
		// process's DELAYQ_ variables. The URL is passed in the environment, where other
		// users of the machine cannot read its password, unlike a command line.
		Env:         append(serverEnv(os.Environ()), "DELAYQ_REDIS="+redisURL),
		Output:      log,
		DeathSignal: syscall.SIGKILL,
	})
	if err != nil {
		return nil, fmt.Errorf("bench: delayq server: %w", err)
	}
	p := &serverProcess{proc: proc, log: log}
	go func() {
		select {
		case <-ctx.Done():
			p.stop()
		case <-proc.Exited():
		}
	}()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case addr := <-log.listening:
		p.base = "http://" + addr
		return p, nil
	case <-proc.Exited():
		return nil, fmt.Errorf("bench: delayq server exited during start-up (%v); its output:\n%s", proc.ExitErr(), log.tail())
	case <-timer.C:
		err = errors.New("bench: delayq server logged no \"listening on\" line in 30s")
	case <-ctx.Done():
		err = fmt.Errorf("bench: starting delayq server: %w", ctx.Err())
	}
	p.stop()
	return nil, fmt.Errorf("%w; its output:\n%s", err, log.tail())
}

// serverEnv returns env without the DELAYQ_ variables.
func serverEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "DELAYQ_") {
			out = append(out, kv)
		}
	}
	return out
}

// stop shuts the server down with SIGTERM, kills it should it take longer than
// serverStopTimeout, and waits until it has exited.
func (p *serverProcess) stop() {
	p.once.Do(func() {
		p.proc.Signal(syscall.SIGTERM)
		select {
		case <-p.proc.Exited():
		case <-time.After(serverStopTimeout):
			_ = p.proc.Kill(time.Minute)
		}
	})
}

// exitErr returns nil while the server runs, else how it ended with its last log lines.
func (p *serverProcess) exitErr() error {
	select {
	case <-p.proc.Exited():
		return fmt.Errorf("delayq server exited (%v); its last lines:\n%s", p.proc.ExitErr(), p.log.tail())
	default:
		return nil
	}
}

// listeningRe finds the address in the server's "listening on <addr>" log line.
var listeningRe = regexp.MustCompile(`listening on ([^\s"]+)`)

// serverLog takes a server's output: it reports the address of its "listening on" line and
// keeps its last lines, for errors. Writes never block, so the server never waits on it.
type serverLog struct {
	listening chan string

	mu      sync.Mutex
	partial []byte
	lines   []string
	found   bool
}

const serverLogLines = 40

func newServerLog() *serverLog { return &serverLog{listening: make(chan string, 1)} }

func (l *serverLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		line := string(l.partial[:i])
		l.partial = l.partial[i+1:]
		if !l.found {
			if m := listeningRe.FindStringSubmatch(line); m != nil {
				l.found = true
				l.listening <- m[1]
			}
		}
		l.lines = append(l.lines, line)
		if len(l.lines) > serverLogLines {
			l.lines = l.lines[1:]
		}
	}
	return len(p), nil
}

// Close is called once the server has exited.
func (l *serverLog) Close() error { return nil }

// tail returns the last lines the server wrote.
func (l *serverLog) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(append(l.lines, string(l.partial)), "\n")
}
