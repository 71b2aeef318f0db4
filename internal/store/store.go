// Package store does all of delayq's Redis I/O: one method per Lua script, each script one
// atomic state transition of one partition. It turns script status codes and redis.Nil into the
// errors below, which the public package re-exports.
package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/keys"
)

// Errors that callers branch on.
var (
	ErrNotFound   = errors.New("delayq: job not found")
	ErrExists     = errors.New("delayq: job id already exists")
	ErrLeaseLost  = errors.New("delayq: lease lost")
	ErrWrongState = errors.New("delayq: job is reserved or dead")
)

var (
	enqueueScript     = loadScript("enqueue")
	reserveScript     = loadScript("reserve")
	ackScript         = loadScript("ack")
	nackScript        = loadScript("nack")
	touchScript       = loadScript("touch")
	releaseScript     = loadScript("release")
	cancelScript      = loadScript("cancel")
	rescheduleScript  = loadScript("reschedule")
	getScript         = loadScript("get")
	statsScript       = loadScript("stats")
	deadListScript    = loadScript("dead_list")
	deadRequeueScript = loadScript("dead_requeue")
	deadDeleteScript  = loadScript("dead_delete")
)

// Store runs delayq's scripts against one Redis deployment.
type Store struct {
	rdb redis.UniversalClient
	ns  string

	// clockOffset is added to the server's TIME in every script; tests set it to move time.
	clockOffset atomic.Int64

	// waitReplicas, when above 0, is how many replicas must confirm an enqueue within
	// waitTimeout (see SetWaitReplicas).
	waitReplicas int
	waitTimeout  time.Duration
}

// New returns a Store for keys under namespace ns.
func New(rdb redis.UniversalClient, ns string) *Store {
	return &Store{rdb: rdb, ns: ns}
}

// Client returns the Redis client the store uses.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// ClockOffset returns the offset set by SetClockOffset.
func (s *Store) ClockOffset() int64 { return s.clockOffset.Load() }

// SetClockOffset moves the clock every script sees by ms milliseconds (tests only).
func (s *Store) SetClockOffset(ms int64) { s.clockOffset.Store(ms) }

// SetWaitReplicas makes EnqueueMany fail unless n replicas confirm its writes within timeout.
// Call it before the Store is used.
func (s *Store) SetWaitReplicas(n int, timeout time.Duration) {
	s.waitReplicas, s.waitTimeout = n, timeout
}

// Partition returns the keys of partition n of topic.
func (s *Store) Partition(topic string, n int) keys.Partition { return keys.For(s.ns, topic, n) }

func (s *Store) run(ctx context.Context, sc *redis.Script, p keys.Partition, args ...any) *redis.Cmd {
	return sc.Run(ctx, s.rdb, p.All(), append([]any{s.clockOffset.Load()}, args...)...)
}

// NewJob is a job to add, already validated, in the units the scripts take.
type NewJob struct {
	ID         string
	Format     int
	Priority   int
	DelayMs    int64 // used when RunAtMs is 0
	RunAtMs    int64 // absolute due time; 0 means use DelayMs
	MaxRetries int
	TTRMs      int64
	Body       []byte
	BackoffMs  []int64 // nil for the default
	Callback   string
}

// Added is the outcome of adding one job: its due time, or ErrExists.
type Added struct {
	RunAtMs int64
	Err     error
}

// EnqueueMany adds jobs to several partitions, one script call each, in one round trip, and
// returns each partition's server time and its jobs' outcomes in order.
func (s *Store) EnqueueMany(ctx context.Context, parts []keys.Partition, jobs [][]NewJob) ([]int64, [][]Added, error) {
	cmds, err := s.pipelined(ctx, enqueueScript, len(parts), func(i int) (keys.Partition, []any) {
		return parts[i], enqueueArgs(jobs[i])
	})
	if err != nil {
		return nil, nil, err
	}
	nows := make([]int64, len(parts))
	out := make([][]Added, len(parts))
	for i, cmd := range cmds {
		nows[i], out[i], err = parseEnqueue(cmd, len(jobs[i]))
		if err != nil {
			return nil, nil, err
		}
	}
	return nows, out, nil
}

// pipelined runs script sc n times in one pipeline. Calls that find the server's script cache
// empty (after a restart, a failover or SCRIPT FLUSH) ran nothing, so they alone are sent again
// with the script's text.
func (s *Store) pipelined(ctx context.Context, sc *redis.Script, n int, call func(i int) (keys.Partition, []any)) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, n)
	pending := make([]int, n)
	for i := range pending {
		pending[i] = i
	}
	// Enqueues are confirmed by replicas when asked: WAIT covers the writes of its own
	// connection only, so it ends each pipeline that carried them.
	var waits []*redis.IntCmd
	confirm := sc == enqueueScript && s.waitReplicas > 0
	for _, eval := range []bool{false, true} {
		_, _ = s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for _, i := range pending {
				p, args := call(i)
				args = append([]any{s.clockOffset.Load()}, args...)
				if eval {
					cmds[i] = sc.Eval(ctx, pipe, p.All(), args...)
				} else {
					cmds[i] = sc.EvalSha(ctx, pipe, p.All(), args...)
				}
			}
			if confirm {
				w := redis.NewIntCmd(ctx, "wait", s.waitReplicas, s.waitTimeout.Milliseconds())
				_ = pipe.Process(ctx, w)
				waits = append(waits, w)
			}
			return nil
		})
		var again []int
		for _, i := range pending {
			if redis.HasErrorPrefix(cmds[i].Err(), "NOSCRIPT") {
				again = append(again, i)
			}
		}
		if len(again) == 0 {
			break
		}
		pending = again
	}
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("delayq: pipeline: %w", err)
		}
	}
	for _, w := range waits {
		n, err := w.Result()
		if err != nil {
			return nil, fmt.Errorf("delayq: waiting for replicas: %w", err)
		}
		if n < int64(s.waitReplicas) {
			return nil, fmt.Errorf("delayq: %d of %d replicas confirmed the write within %v", n, s.waitReplicas, s.waitTimeout)
		}
	}
	return cmds, nil
}

func enqueueArgs(jobs []NewJob) []any {
	args := make([]any, 0, 1+5*len(jobs))
	args = append(args, len(jobs))
	for _, j := range jobs {
		delay, at := strconv.FormatInt(j.DelayMs, 10), ""
		if j.RunAtMs != 0 {
			delay, at = "", strconv.FormatInt(j.RunAtMs, 10)
		}
		args = append(args, j.ID, delay, at, recordHead(j), recordTail(j))
	}
	return args
}

func parseEnqueue(cmd *redis.Cmd, n int) (int64, []Added, error) {
	vals, err := cmd.Int64Slice()
	if err != nil {
		return 0, nil, fmt.Errorf("delayq: enqueue: %w", err)
	}
	if len(vals) != 1+2*n {
		return 0, nil, fmt.Errorf("delayq: enqueue: %d values in reply, want %d", len(vals), 1+2*n)
	}
	out := make([]Added, n)
	for i := range out {
		if vals[1+2*i] == 0 {
			out[i].Err = ErrExists
		}
		out[i].RunAtMs = vals[2+2*i]
	}
	return vals[0], out, nil
}

// Lane selects the ready set a reserve takes from.
type Lane string

// Lanes: pull consumers take jobs without a callback URL, the webhook dispatcher those with one.
const (
	LanePull Lane = "pull"
	LanePush Lane = "push"
)

// Reserved is what a reserve call returns.
type Reserved struct {
	NowMs  int64
	NextMs int64   // the partition's next due time or lease deadline; NowMs when more are due; -1 for none
	Acked  []error // per lease acked along with the reserve: nil or ErrLeaseLost
	Jobs   []Record
}

// Reserve acks acks, then leases up to max due jobs of partition p from lane, first failing
// expired leases and promoting due jobs, at most bulk of each.
func (s *Store) Reserve(ctx context.Context, p keys.Partition, lane Lane, max int, leasePrefix string, bulk int, ttrMs int64, acks []Lease) (Reserved, error) {
	args := make([]any, 0, 5+2*len(acks))
	args = append(args, string(lane), max, leasePrefix, bulk, ttrMs)
	args = appendLeases(args, acks)
	vals, err := s.run(ctx, reserveScript, p, args...).Slice()
	if err != nil {
		return Reserved{}, fmt.Errorf("delayq: reserve: %w", err)
	}
	if len(vals) < 3 {
		return Reserved{}, fmt.Errorf("delayq: reserve: short reply")
	}
	r := Reserved{NowMs: toInt(vals[0]), NextMs: toInt(vals[1])}
	if r.Acked, err = parseAcked(vals[2], len(acks)); err != nil {
		return Reserved{}, err
	}
	r.Jobs, err = parseRecords(vals[3:])
	return r, err
}

// Lease names a leased job.
type Lease struct{ ID, Token string }

// AckMany removes reserved jobs, one script call per partition, all in one round trip, and
// returns for each lease nil or ErrLeaseLost, in order.
func (s *Store) AckMany(ctx context.Context, parts []keys.Partition, leases [][]Lease) ([][]error, error) {
	cmds, err := s.pipelined(ctx, ackScript, len(parts), func(i int) (keys.Partition, []any) {
		return parts[i], appendLeases(make([]any, 0, 2*len(leases[i])), leases[i])
	})
	if err != nil {
		return nil, err
	}
	out := make([][]error, len(parts))
	for i, cmd := range cmds {
		v, err := cmd.Result()
		if err != nil {
			return nil, fmt.Errorf("delayq: ack: %w", err)
		}
		if out[i], err = parseAcked(v, len(leases[i])); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func appendLeases(args []any, leases []Lease) []any {
	for _, l := range leases {
		args = append(args, l.ID, l.Token)
	}
	return args
}

// parseAcked reads ack_leases()'s reply for n leases.
func parseAcked(v any, n int) ([]error, error) {
	vals, ok := v.([]any)
	if !ok || len(vals) != n {
		return nil, fmt.Errorf("delayq: ack: malformed reply %T for %d leases", v, n)
	}
	out := make([]error, n)
	for i, a := range vals {
		if toInt(a) == 0 {
			out[i] = ErrLeaseLost
		}
	}
	return out, nil
}

// Nack ends a leased attempt as failed. delayMs < 0 means the job's backoff step. It reports
// whether the job went to the dead letters.
func (s *Store) Nack(ctx context.Context, p keys.Partition, id, lease, errText string, delayMs int64, dead bool) (bool, error) {
	delay, buried := "", "0"
	if delayMs >= 0 {
		delay = strconv.FormatInt(delayMs, 10)
	}
	if dead {
		buried = "1"
	}
	n, err := s.run(ctx, nackScript, p, id, lease, errText, delay, buried).Int64()
	if err != nil {
		return false, fmt.Errorf("delayq: nack: %w", err)
	}
	if n == 0 {
		return false, ErrLeaseLost
	}
	return n == 2, nil
}

// Touch extends a lease by ttrMs (0: the job's TTR) and returns the new deadline in Unix ms.
func (s *Store) Touch(ctx context.Context, p keys.Partition, id, lease string, ttrMs int64) (int64, error) {
	deadline, err := s.run(ctx, touchScript, p, id, lease, ttrMs).Int64()
	if err != nil {
		return 0, fmt.Errorf("delayq: touch: %w", err)
	}
	if deadline == 0 {
		return 0, ErrLeaseLost
	}
	return deadline, nil
}

// Release gives a lease back unfinished: the job is due again at once, its attempt not counted.
func (s *Store) Release(ctx context.Context, p keys.Partition, id, lease string) error {
	n, err := s.run(ctx, releaseScript, p, id, lease).Int64()
	if err != nil {
		return fmt.Errorf("delayq: release: %w", err)
	}
	if n == 0 {
		return ErrLeaseLost
	}
	return nil
}

// Cancel deletes a job in any state.
func (s *Store) Cancel(ctx context.Context, p keys.Partition, id string) error {
	n, err := s.run(ctx, cancelScript, p, id).Int64()
	if err != nil {
		return fmt.Errorf("delayq: cancel: %w", err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// Reschedule moves a delayed or ready job: to now+ms when relative, else to Unix ms.
func (s *Store) Reschedule(ctx context.Context, p keys.Partition, id string, relative bool, ms int64) (Record, error) {
	mode := "at"
	if relative {
		mode = "delay"
	}
	vals, err := s.run(ctx, rescheduleScript, p, id, mode, ms).Slice()
	if err != nil {
		return Record{}, fmt.Errorf("delayq: reschedule: %w", err)
	}
	switch toInt(vals[0]) {
	case -1:
		return Record{}, ErrNotFound
	case 0:
		return Record{}, ErrWrongState
	}
	return parseRecord(vals[1])
}

// Get reads one job.
func (s *Store) Get(ctx context.Context, p keys.Partition, id string) (Record, error) {
	v, err := s.run(ctx, getScript, p, id).Result()
	if errors.Is(err, redis.Nil) {
		return Record{}, ErrNotFound
	}
	if err != nil {
		return Record{}, fmt.Errorf("delayq: get: %w", err)
	}
	return parseRecord(v)
}

// Counts are one partition's jobs by state.
type Counts struct {
	NowMs, Delayed, Ready, Reserved, Dead int64
	EarliestMs                            int64 // earliest pending due time; -1 for none
	OldestReadyMs                         int64 // earliest due time among ready jobs; -1 for none
}

// Stats counts the jobs of each partition in parts, in one pipelined round trip.
func (s *Store) Stats(ctx context.Context, parts []keys.Partition) ([]Counts, error) {
	cmds, err := s.pipelined(ctx, statsScript, len(parts), func(i int) (keys.Partition, []any) {
		return parts[i], nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]Counts, len(parts))
	for i, cmd := range cmds {
		v, err := cmd.Int64Slice()
		if err != nil || len(v) != 7 {
			return nil, fmt.Errorf("delayq: stats: %d values: %w", len(v), err)
		}
		out[i] = Counts{v[0], v[1], v[2], v[3], v[4], v[5], v[6]}
	}
	return out, nil
}
