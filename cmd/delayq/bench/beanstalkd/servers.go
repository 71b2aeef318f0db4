package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/childproc"
)

const (
	startTimeout = 30 * time.Second
	stopGrace    = 15 * time.Second
)

// contestant is one server under test.
type contestant struct {
	name  string
	start func(dir string) (*server, error)
	srv   *server
}

// server is a running contestant: the processes it is made of, by name ("delayq",
// "redis-server", "beanstalkd"); the first is the one started and stopped.
type server struct {
	addr  string
	procs []proc
	main  *childproc.Process
	redis *redis.Client // delayq's embedded redis-server, for its command statistics; nil for beanstalkd
}

type proc struct {
	name string
	pid  int
}

func (s *server) pids() []int {
	var ids []int
	for _, p := range s.procs {
		ids = append(ids, p.pid)
	}
	return ids
}

// stop sends SIGTERM to the process this program started (delayq stops its own redis-server)
// and SIGKILL after a grace period.
func (s *server) stop() error {
	if s.redis != nil {
		s.redis.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	return s.main.Terminate(ctx, stopGrace)
}

func stopAll(cs []*contestant) {
	for _, c := range cs {
		if c.srv != nil {
			if err := c.srv.stop(); err != nil {
				logf("%s: %v", c.name, err)
			}
			c.srv = nil
		}
	}
}

func startProcess(bin string, args []string, dir string, death syscall.Signal) (*childproc.Process, error) {
	out, err := os.Create(filepath.Join(dir, "output.log"))
	if err != nil {
		return nil, err
	}
	return childproc.Start(childproc.Options{Bin: bin, Args: args, Output: out, DeathSignal: death})
}

// waitAccepts waits until addr accepts a connection, the process exits or the start times out.
func waitAccepts(ctx context.Context, p *childproc.Process, addr, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	err := p.WaitReady(ctx, 20*time.Millisecond, childproc.Accepts(addr))
	if err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
		defer cancel()
		_ = p.Terminate(ctx, stopGrace)
		return fmt.Errorf("%w; output: %s", err, childproc.LogTail(filepath.Join(dir, "output.log"), 10))
	}
	return nil
}

// startBeanstalkd runs beanstalkd on a free loopback port with its binlog in dir.
func startBeanstalkd(ctx context.Context, dir string, extra ...string) (*server, error) {
	bin, err := exec.LookPath("beanstalkd")
	if err != nil {
		return nil, errors.New("beanstalkd is not on PATH (make ensure-beanstalkd installs it)")
	}
	port, err := childproc.ReservePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := append([]string{"-l", "127.0.0.1", "-p", strconv.Itoa(port), "-b", dir}, extra...)
	p, err := startProcess(bin, args, dir, syscall.SIGKILL)
	if err != nil {
		return nil, err
	}
	if err := waitAccepts(ctx, p, addr, dir); err != nil {
		return nil, err
	}
	return &server{addr: addr, main: p, procs: []proc{{"beanstalkd", p.Pid()}}}, nil
}

// startDelayq runs delayq server with its embedded redis-server (AOF, appendfsync everysec) in
// dir, its HTTP API on a free loopback port and the beanstalkd protocol on another.
func startDelayq(ctx context.Context, bin, dir string) (*server, error) {
	port, err := childproc.ReservePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	data := filepath.Join(dir, "data")
	args := []string{"server", "--listen", "127.0.0.1:0", "--data-dir", data, "--redis", "",
		"--redis-appendfsync", "everysec", "--beanstalkd-listen", addr, "--log-level", "warn"}
	p, err := startProcess(bin, args, dir, syscall.SIGTERM)
	if err != nil {
		return nil, err
	}
	if err := waitAccepts(ctx, p, addr, dir); err != nil {
		return nil, err
	}
	s := &server{addr: addr, main: p, procs: []proc{{"delayq", p.Pid()}}}
	s.redis = redis.NewClient(&redis.Options{Network: "unix", Addr: filepath.Join(data, "redis.sock"), PoolSize: 1})
	pid, err := redisPid(ctx, s.redis)
	if err != nil {
		_ = s.stop()
		return nil, err
	}
	s.procs = append(s.procs, proc{"redis-server", pid})
	return s, nil
}

// redisPid asks the embedded redis-server for its process id and checks its persistence.
func redisPid(ctx context.Context, rdb *redis.Client) (int, error) {
	info, err := rdb.Info(ctx, "server", "persistence").Result()
	if err != nil {
		return 0, fmt.Errorf("embedded redis: %w", err)
	}
	if field(info, "aof_enabled") != "1" {
		return 0, errors.New("embedded redis: AOF is off")
	}
	if got, err := rdb.ConfigGet(ctx, "appendfsync").Result(); err != nil || got["appendfsync"] != "everysec" {
		return 0, fmt.Errorf("embedded redis: appendfsync %v (%v), want everysec", got, err)
	}
	return strconv.Atoi(field(info, "process_id"))
}

func field(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// cpuTime returns the CPU time (user and system) a process has used so far, from /proc.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses: state is the first of them,
	// utime and stime (in clock ticks, 100 a second on Linux) the 12th and 13th.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// cmdStat is what INFO commandstats reports of one command.
type cmdStat struct {
	calls int64
	usec  int64
}

// commandStats reads INFO commandstats: calls and microseconds by command.
func commandStats(ctx context.Context, rdb *redis.Client) (map[string]cmdStat, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	m := map[string]cmdStat{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "cmdstat_")), ":")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		var c cmdStat
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				c.calls = n
			case "usec":
				c.usec = n
			}
		}
		m[name] = c
	}
	return m, nil
}

// machineBusy returns the machine's CPU time spent on anything but idling so far, from
// /proc/stat, in clock ticks.
func machineBusy() (int64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, errors.New("/proc/stat: no cpu line")
	}
	var busy int64
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, err
		}
		if i != 3 && i != 4 && i < 8 { // not idle, iowait, nor guest (counted in user already)
			busy += n
		}
	}
	return busy, nil
}
