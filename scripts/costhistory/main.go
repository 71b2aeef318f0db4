//go:build ignore

// Command costhistory counts the redis-server instructions per call of delayq's Enqueue (a),
// EnqueueBatch of 12 (b) and Enqueue+Reserve(Max 1)+Ack (c), with the default Config, under
// callgrind: N calls less 0 calls, each on a fresh server, serverCron and the slow log left
// out. It uses delayq's public API only, so that it builds at any commit since the lease API
// took its shape (ack_lease.go, or ack_args.go before Lease values); scripts/cost-history.sh
// builds and runs it at each commit asked for.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
)

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func body(i int) []byte {
	b := make([]byte, 100)
	for k := 9; k >= 0; k-- {
		b[k] = byte('0' + i%10)
		i /= 10
	}
	for k := 10; k < 100; k++ {
		b[k] = 'x'
	}
	return b
}

// open returns a delayq Client on rdb with its default Config and a topic that exists, as it
// does for a running producer.
func open(ctx context.Context, rdb *redis.Client) (*delayq.Client, error) {
	c, err := delayq.New(ctx, rdb, delayq.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	if _, err := c.Enqueue(ctx, "cost", delayq.Spec{Body: body(0), Delay: time.Hour}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func enqueue(perCall int) func(context.Context, *redis.Client, int) error {
	return func(ctx context.Context, rdb *redis.Client, calls int) error {
		c, err := open(ctx, rdb)
		if err != nil {
			return err
		}
		defer c.Close()
		specs := make([]delayq.Spec, perCall)
		for i := range calls {
			for k := range specs {
				specs[k] = delayq.Spec{Body: body(i*perCall + k), Delay: time.Hour}
			}
			if perCall == 1 {
				_, err = c.Enqueue(ctx, "cost", specs[0])
			} else {
				_, err = c.EnqueueBatch(ctx, "cost", specs)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
}

func lifecycle(ctx context.Context, rdb *redis.Client, calls int) error {
	c, err := open(ctx, rdb)
	if err != nil {
		return err
	}
	defer c.Close()
	for i := range calls {
		if _, err := c.Enqueue(ctx, "cost", delayq.Spec{Body: body(i)}); err != nil {
			return err
		}
		jobs, err := c.Reserve(ctx, "cost", delayq.ReserveOptions{Max: 1})
		if err != nil || len(jobs) != 1 {
			return fmt.Errorf("reserve: %d jobs, %v", len(jobs), err)
		}
		if err := ack(ctx, c, jobs[0]); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	calls := flag.Int("calls", 500, "calls per variant")
	only := flag.String("variants", "abc", "variants to run")
	flag.Parse()
	log.SetFlags(0)
	redis.SetLogger(quiet{})
	ctx := context.Background()
	vs := map[byte]func(context.Context, *redis.Client, int) error{'a': enqueue(1), 'b': enqueue(12), 'c': lifecycle}
	for i := 0; i < len(*only); i++ {
		name := (*only)[i]
		base, err := instructions(ctx, vs[name], 0)
		if err != nil {
			log.Fatalf("%c base: %v", name, err)
		}
		total, err := instructions(ctx, vs[name], *calls)
		if err != nil {
			log.Fatalf("%c: %v", name, err)
		}
		fmt.Printf("variant=%c calls=%d base=%d total=%d per_call=%d\n", name, *calls, base, total, (total-base)/int64(*calls))
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func instructions(ctx context.Context, run func(context.Context, *redis.Client, int) error, calls int) (int64, error) {
	dir, err := os.MkdirTemp("", "delayq-costhistory-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	port, err := freePort()
	if err != nil {
		return 0, err
	}
	out := filepath.Join(dir, "callgrind.out")
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return 0, err
	}
	cmd := exec.Command("valgrind", "--tool=callgrind", "--callgrind-out-file="+out, "--compress-strings=no",
		bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--slowlog-log-slower-than", "-1", "--dir", dir,
		"--logfile", filepath.Join(dir, "redis.log"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	defer func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	defer rdb.Close()
	deadline := time.Now().Add(time.Minute)
	for rdb.Ping(ctx).Err() != nil {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("redis-server did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := run(ctx, rdb, calls); err != nil {
		return 0, err
	}
	_ = rdb.Do(ctx, "shutdown", "nosave").Err()
	select {
	case <-done:
	case <-time.After(time.Minute):
		return 0, fmt.Errorf("redis-server did not stop")
	}
	return totalInstructions(out)
}

func totalInstructions(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var total, cron int64
	found, inCron := false, false
	for _, line := range strings.Split(string(b), "\n") {
		if name, ok := strings.CutPrefix(line, "fn="); ok {
			inCron = name == "serverCron"
			continue
		}
		if inCron && line != "" && strings.ContainsRune("0123456789+-*", rune(line[0])) {
			if f := strings.Fields(line); len(f) >= 2 {
				n, err := strconv.ParseInt(f[1], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("%s: %q: %w", path, line, err)
				}
				cron += n
			}
		}
		for _, prefix := range []string{"summary: ", "totals: "} {
			if v, ok := strings.CutPrefix(line, prefix); ok {
				if total, err = strconv.ParseInt(strings.Fields(v)[0], 10, 64); err != nil {
					return 0, err
				}
				found = true
			}
		}
	}
	if !found {
		return 0, fmt.Errorf("no summary line in %s", path)
	}
	return total - cron, nil
}
