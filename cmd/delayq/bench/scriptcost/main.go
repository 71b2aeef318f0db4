// Command scriptcost counts the CPU instructions redis-server spends on one call of delayq's hot
// path (an enqueue, a reserve, an ack, a job's whole life) and on the floor's enqueue (one
// EVALSHA that stores a body and adds it to a sorted set), with redis-server running under
// valgrind's callgrind. Instruction counts do not depend on what else the machine is doing, so
// the figures repeat from run to run where timings would not.
//
// Each variant runs on a fresh redis-server: it sets itself up (opens a client, loads the
// scripts, enqueues the jobs it will reserve), the counters are zeroed (callgrind_control -z),
// it makes -calls calls, and the counters are dumped; their total divided by the calls is the
// cost of one call, from reading its request to writing its reply. Two things redis-server does
// by the clock are left out, as under callgrind they follow the machine's load: serverCron,
// which runs ten times a second of wall time, and the slow log, which copies the arguments of
// every call slower than 10 ms (under callgrind, some calls are, some not). Without them a
// figure repeats within 0.2 %. Needs valgrind (with callgrind_control) and redis-server on PATH.
//
//	go run ./cmd/delayq/bench/scriptcost [-calls 2000]
//	go run ./cmd/delayq/bench/scriptcost -check
//
// -check runs the variants internal/budget guards, as many calls each as their budget says,
// and fails when one costs more than its budget. It leaves out the C library's string
// functions chosen for the CPU (about 6 % of a call), so that a budget holds on another
// machine; the table counts them.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/archive"
	"github.com/delayq/delayq/cmd/delayq/internal/bench"
	"github.com/delayq/delayq/internal/budget"
	"github.com/delayq/delayq/internal/childproc"
	"github.com/delayq/delayq/internal/redisproc"
)

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// variant is one kind of call, perJob jobs a call. run sets itself up, then makes calls calls,
// counting them with count: only what it does between count.Start and count.Stop is counted
// (and from its last Start to its end).
type variant struct {
	name   string
	guard  string // its name in budget.Instructions, "" when not guarded
	perJob int
	rounds bool // whether it counts each call alone
	run    func(ctx context.Context, rdb *redis.Client, calls int, count *counter) error
}

func main() {
	calls := flag.Int("calls", 2000, "calls per variant")
	check := flag.Bool("check", false, "run the variants internal/budget guards and fail when one is over its budget")
	flag.Parse()
	log.SetFlags(0)
	for _, tool := range []string{"valgrind", "callgrind_control"} {
		if _, err := exec.LookPath(tool); err != nil {
			log.Fatalf("scriptcost: %s is not on PATH (Debian: apt-get install valgrind)", tool)
		}
	}
	// go-redis logs every failed dial while the server starts under valgrind.
	redis.SetLogger(quiet{})
	ctx := context.Background()
	if *check {
		if !checkBudgets(ctx) {
			os.Exit(1)
		}
		return
	}
	fmt.Println("| variant | instructions per call | per job |")
	fmt.Println("|---|---:|---:|")
	for _, v := range variants() {
		n := *calls
		if v.rounds {
			n = max(1, n/20) // each call is counted alone: a tenth of a second's work
		}
		perCall, err := instructions(ctx, v, n, false)
		if err != nil {
			log.Fatalf("scriptcost: %s: %v", v.name, err)
		}
		fmt.Printf("| %s | %d | %d |\n", v.name, perCall, perCall/int64(v.perJob))
	}
}

// checkBudgets measures the guarded variants and reports whether each is within its budget. A
// variant's figure is the median of three runs, each on a server of its own: the hash seed
// Redis draws at its start moves the cost of its lookups by up to half a percent.
func checkBudgets(ctx context.Context) bool {
	ok := true
	guarded := 0
	for _, v := range variants() {
		if v.guard == "" {
			continue
		}
		guarded++
		b, found := budget.Instructions[v.guard]
		if !found {
			log.Fatalf("scriptcost: no budget for %q in internal/budget", v.guard)
		}
		var runs []int64
		for range 3 {
			perCall, err := instructions(ctx, v, b.Calls, true)
			if err != nil {
				log.Fatalf("scriptcost: %s: %v", v.name, err)
			}
			runs = append(runs, perCall)
		}
		slices.Sort(runs)
		verdict, within := b.Judge(float64(runs[1]))
		ok = ok && within
		fmt.Printf("%-11s %9d instructions per call (runs %d, %d, %d): %s\n", v.guard, runs[1], runs[0], runs[1], runs[2], verdict)
	}
	if guarded != len(budget.Instructions) {
		log.Fatalf("scriptcost: internal/budget has %d instruction budgets, the check measures %d", len(budget.Instructions), guarded)
	}
	return ok
}

func variants() []variant {
	return []variant{
		{"an empty script (`return 1`), no keys or arguments", "", 1, false, emptyScript(false)},
		{"the empty script given a lone enqueue's 6 keys and 10 arguments", "", 1, false, emptyScript(true)},
		{"floor: one EVALSHA (TIME, HSET, ZADD)", "", 1, false, runFloor},
		{"delayq Enqueue, replay window 0 (no call record)", "", 1, false, enqueueWith(-1, 1)},
		{"delayq Enqueue (default config: no call record for a job due this late)", "enqueue", 1, false, enqueueWith(0, 1)},
		{"delayq, 16 jobs a call, replay window 0", "", 16, false, enqueueWith(-1, 16)},
		{"delayq, 16 jobs a call (as 16 producers coalesce)", "enqueue-16", 16, false, enqueueWith(0, 16)},
		{"delayq Reserve of 16 due jobs (acked before the next, uncounted)", "reserve-16", 16, true, reserve16},
		{"delayq Ack of one lease of 16 held", "ack", 1, false, ackOne},
		{"delayq Enqueue, Reserve and Ack of one job, replay window 0", "", 1, false, lifecycle(-1, false, false)},
		{"delayq Enqueue, Reserve and Ack of one job", "", 1, false, lifecycle(0, false, false)},
		{"delayq Enqueue, Reserve and Ack of one job with an id (a fingerprint, an ended marker)", "", 1, false, lifecycle(0, false, true)},
		{"the same, its id kept taken for an hour once acked (unique_for 1 h)", "", 1, false, lifecycleUnique(time.Hour)},
		{"the same, unique_for from the topic's default (1 h)", "", 1, false, lifecycleUnique(-1)},
		{"delayq Enqueue, Reserve and Ack of one job, history archived", "", 1, false, lifecycle(0, true, false)},
	}
}

// open returns a delayq Client on rdb with the given replay window and a topic that exists, as
// it does for a running producer.
func open(ctx context.Context, rdb *redis.Client, window time.Duration) (*delayq.Client, error) {
	c, err := delayq.New(ctx, rdb, delayq.Config{ReplayWindow: window, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	if _, err := c.Enqueue(ctx, "cost", delayq.Spec{Body: bench.Body(0), Delay: time.Hour}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// lifecycle enqueues, reserves and acks one job a call with the given replay window, its end
// appended to its partition's history stream when archived is set (no archiver reads it here),
// each job with an id of the caller's when named is set.
func lifecycle(window time.Duration, archived, named bool) func(context.Context, *redis.Client, int, *counter) error {
	return lifecycleOf(window, archived, named, 0, 0)
}

// lifecycleUnique is lifecycle of jobs with an id that keep it taken for unique once acked:
// their own Spec.UniqueFor, or, when unique is below 0, the topic's default of an hour.
func lifecycleUnique(unique time.Duration) func(context.Context, *redis.Client, int, *counter) error {
	if unique < 0 {
		return lifecycleOf(0, false, true, 0, time.Hour)
	}
	return lifecycleOf(0, false, true, unique, 0)
}

// lifecycleOf is lifecycle with each job's Spec.UniqueFor set to unique, and the topic's
// default to topicUnique when it is above 0.
func lifecycleOf(window time.Duration, archived, named bool, unique, topicUnique time.Duration) func(context.Context, *redis.Client, int, *counter) error {
	return func(ctx context.Context, rdb *redis.Client, calls int, count *counter) error {
		c, err := open(ctx, rdb, window)
		if err != nil {
			return err
		}
		defer c.Close()
		if archived {
			if err := archive.Enable(ctx, c, 1<<40, false); err != nil {
				return err
			}
		}
		if topicUnique > 0 {
			if err := c.SetTopicDefaults(ctx, "cost", delayq.TopicDefaults{UniqueFor: topicUnique}); err != nil {
				return err
			}
		}
		if err := count.Start(); err != nil {
			return err
		}
		for i := range calls {
			s := delayq.Spec{Body: bench.Body(i), UniqueFor: unique}
			if named {
				s.ID = "order-" + strconv.Itoa(i)
			}
			if _, err := c.Enqueue(ctx, "cost", s); err != nil {
				return err
			}
			jobs, err := c.Reserve(ctx, "cost", delayq.ReserveOptions{Max: 1})
			if err != nil || len(jobs) != 1 {
				return fmt.Errorf("reserve: %d jobs, %v", len(jobs), err)
			}
			if err := c.Ack(ctx, jobs[0].Lease()); err != nil {
				return err
			}
		}
		return nil
	}
}

// dueJobs enqueues n jobs due now, 16 a call.
func dueJobs(ctx context.Context, c *delayq.Client, n int) error {
	for i := 0; i < n; i += 16 {
		specs := make([]delayq.Spec, min(16, n-i))
		for k := range specs {
			specs[k] = delayq.Spec{Body: bench.Body(i + k)}
		}
		if _, err := c.EnqueueBatch(ctx, "cost", specs); err != nil {
			return err
		}
	}
	return nil
}

// reserve16 reserves 16 due jobs a call, from 16 times calls enqueued before counting; the
// jobs of each call are acked before the next, uncounted, as a worker's would be.
func reserve16(ctx context.Context, rdb *redis.Client, calls int, count *counter) error {
	c, err := open(ctx, rdb, 0)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := dueJobs(ctx, c, 16*calls); err != nil {
		return err
	}
	for range calls {
		if err := count.Start(); err != nil {
			return err
		}
		jobs, err := c.Reserve(ctx, "cost", delayq.ReserveOptions{Max: 16, TTR: time.Hour})
		if err != nil || len(jobs) != 16 {
			return fmt.Errorf("reserve: %d jobs, %v", len(jobs), err)
		}
		if err := count.Stop(); err != nil {
			return err
		}
		for _, j := range jobs {
			if err := c.Ack(ctx, j.Lease()); err != nil {
				return err
			}
		}
	}
	return nil
}

// ackOne acks one lease a call, from jobs reserved 16 at a time, uncounted, as a worker with
// 16 handlers holds them.
func ackOne(ctx context.Context, rdb *redis.Client, calls int, count *counter) error {
	c, err := open(ctx, rdb, 0)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := dueJobs(ctx, c, calls); err != nil {
		return err
	}
	for left := calls; left > 0; {
		jobs, err := c.Reserve(ctx, "cost", delayq.ReserveOptions{Max: min(16, left), TTR: time.Hour})
		if err != nil || len(jobs) == 0 {
			return fmt.Errorf("reserve: %d jobs, %v", len(jobs), err)
		}
		if err := count.Start(); err != nil {
			return err
		}
		for _, j := range jobs {
			if err := c.Ack(ctx, j.Lease()); err != nil {
				return err
			}
		}
		if err := count.Stop(); err != nil {
			return err
		}
		left -= len(jobs)
	}
	return nil
}

// runFloor enqueues through the benchmark's floor contestant, one call per job.
func runFloor(ctx context.Context, rdb *redis.Client, calls int, count *counter) error {
	q, err := (&bench.Floor{RDB: rdb}).Open(ctx, "cost")
	if err != nil {
		return err
	}
	if _, err := q.Produce(ctx, bench.Plan{N: 1, Delay: time.Hour}); err != nil {
		return err
	}
	if err := count.Start(); err != nil {
		return err
	}
	_, err = q.Produce(ctx, bench.Plan{N: calls, Delay: time.Hour})
	return err
}

// emptyScript calls a script that does nothing, with no keys or arguments, or with as many
// (and as long) as delayq's Enqueue of one job passes: its 6 keys, the call's replay settings
// and the job's id, delay and record around a 100-byte body. The difference is what Redis
// spends on a call's arguments alone (each becomes a Lua string in the KEYS or ARGV table).
func emptyScript(enqueueArgs bool) func(context.Context, *redis.Client, int, *counter) error {
	return func(ctx context.Context, rdb *redis.Client, calls int, count *counter) error {
		script := redis.NewScript("return 1")
		if err := script.Load(ctx, rdb).Err(); err != nil {
			return err
		}
		if err := count.Start(); err != nil {
			return err
		}
		for i := range calls {
			var keys []string
			var args []any
			if enqueueArgs {
				for _, k := range []string{"jobs", "delayed", "dead", "notify", "settings"} {
					keys = append(keys, "delayq:{cost#0}:"+k)
				}
				keys = append(keys, fmt.Sprintf("delayq:{cost#0}:call:%016d", i))
				id := fmt.Sprintf("01M8AKJ8J77JPBSQZR%08d", i)
				args = []any{0, 30000, 0, 1, "0", id, 3600000, "", "\x00\xc0\xcdu0\x00",
					"\x00\x05\xd9d" + string(bench.Body(i))}
			}
			if err := script.EvalSha(ctx, rdb, keys, args...).Err(); err != nil {
				return err
			}
		}
		return nil
	}
}

// enqueueWith enqueues through a delayq Client with the given replay window, perCall jobs a
// call (EnqueueBatch when more than one).
func enqueueWith(window time.Duration, perCall int) func(context.Context, *redis.Client, int, *counter) error {
	return func(ctx context.Context, rdb *redis.Client, calls int, count *counter) error {
		c, err := open(ctx, rdb, window)
		if err != nil {
			return err
		}
		defer c.Close()
		specs := make([]delayq.Spec, perCall)
		if perCall > 1 { // EnqueueBatch's script is loaded before counting, as Enqueue's is
			for k := range specs {
				specs[k] = delayq.Spec{Body: bench.Body(k), Delay: time.Hour}
			}
			if _, err := c.EnqueueBatch(ctx, "cost", specs); err != nil {
				return err
			}
		}
		if err := count.Start(); err != nil {
			return err
		}
		for i := range calls {
			for k := range specs {
				specs[k] = delayq.Spec{Body: bench.Body(i*perCall + k), Delay: time.Hour}
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

// instructions runs redis-server under callgrind and v in it, and returns the instructions the
// server executed for v's calls (what v counted), per call; portable leaves out the C library's
// functions chosen for the CPU (see totalInstructions).
func instructions(ctx context.Context, v variant, calls int, portable bool) (int64, error) {
	bin, err := redisproc.Binary()
	if err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp("", "delayq-scriptcost-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	port, err := childproc.ReservePort()
	if err != nil {
		return 0, err
	}
	out := filepath.Join(dir, "callgrind.out")
	p, err := childproc.Start(childproc.Options{Bin: "valgrind", Args: []string{
		"--tool=callgrind", "--callgrind-out-file=" + out, "--compress-strings=no", bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--slowlog-log-slower-than", "-1",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"),
	}, DeathSignal: syscall.SIGKILL})
	if err != nil {
		return 0, err
	}
	defer func() { _ = p.Kill(time.Minute) }()
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	defer rdb.Close()
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := p.WaitReady(wctx, 50*time.Millisecond, redisproc.PingReady(rdb)); err != nil {
		return 0, err
	}
	count := &counter{ctx: ctx, pid: p.Pid()}
	if err := v.run(ctx, rdb, calls, count); err != nil {
		return 0, err
	}
	if err := count.Stop(); err != nil {
		return 0, err
	}
	_ = rdb.Do(ctx, "shutdown", "nosave").Err()
	select {
	case <-p.Exited():
	case <-time.After(time.Minute):
		return 0, fmt.Errorf("redis-server did not stop")
	}
	// Each Stop dumped what was counted since its Start: out.1, out.2, and so on.
	var total int64
	for i := 1; i <= count.dumps; i++ {
		n, err := totalInstructions(out+"."+strconv.Itoa(i), portable)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total / int64(calls), nil
}

// counter starts and stops callgrind's counting in a running redis-server (callgrind_control
// -z and -d, about a tenth of a second each).
type counter struct {
	ctx      context.Context
	pid      int
	counting bool
	dumps    int // the dumps written so far
}

// Start zeroes the counters: what the server does from now on is counted.
func (c *counter) Start() error {
	if c.counting {
		return nil
	}
	c.counting = true
	return c.control("-z")
}

// Stop writes out what was counted since Start, and stops counting.
func (c *counter) Stop() error {
	if !c.counting {
		return nil
	}
	c.counting = false
	c.dumps++
	return c.control("-d")
}

func (c *counter) control(op string) error {
	b, err := exec.CommandContext(c.ctx, "callgrind_control", op, strconv.Itoa(c.pid)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("callgrind_control %s: %v: %s", op, err, b)
	}
	return nil
}

// totalInstructions reads the total of a callgrind output file (its "summary:" or "totals:"
// line), less what serverCron took, its callees included: the cost lines under "fn=serverCron"
// (written with --compress-strings=no), its own and those of its calls. When portable is set it
// also leaves out the instructions of the C library's string functions that the library picks
// for the CPU at start (memset, memcpy, memcmp, strchr... from sysdeps/x86_64/multiarch, about
// 6 % of a call): another processor runs variants of them with other counts, and a budget
// measured on one machine must hold on the next; and what the event loop does around each of
// its turns (beforeSleep, afterSleep: a call's reply is written there, but so is the work of
// every timer turn, whose number follows the wall time a run takes under callgrind). -check
// counts so; the table counts all.
func totalInstructions(path string, portable bool) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var total, cron, dispatched int64
	found, inCron, inDispatched, inclusive := false, false, false, false
	file := ""
	cost := func(line string) (int64, error) {
		f := strings.Fields(line)
		if len(f) < 2 {
			return 0, nil
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q: %w", path, line, err)
		}
		return n, nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		if name, ok := strings.CutPrefix(line, "fl="); ok {
			file = name
			continue
		}
		if name, ok := strings.CutPrefix(line, "fn="); ok {
			inCron = name == "serverCron" || portable && (name == "beforeSleep" || name == "afterSleep")
			inDispatched = strings.Contains(file, "/multiarch/")
			continue
		}
		if strings.HasPrefix(line, "calls=") {
			inclusive = true // the next cost line is the call's, its callees included
			continue
		}
		if line != "" && strings.ContainsRune("0123456789+-*", rune(line[0])) {
			n, err := cost(line)
			if err != nil {
				return 0, err
			}
			if inCron {
				cron += n
			}
			if portable && inDispatched && !inclusive && !inCron {
				dispatched += n
			}
			inclusive = false
			continue
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
	return total - cron - dispatched, nil
}
