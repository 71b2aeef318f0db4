// Package store does all of delayq's Redis I/O: one method per Lua script, each script one
// atomic state transition of one partition. It turns script status codes and redis.Nil into the
// errors below, which the public package re-exports.
package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
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
	// ErrDone: the id is taken by a job that ended within its unique_for (see DoneError).
	ErrDone = errors.New("delayq: job already done")
)

var (
	enqueueScript     = loadScript("enqueue")
	upsertScript      = loadScriptWith("enqueue", "scripts/lib_conflict.lua") // for jobs that keep or replace
	reserveScript     = loadScript("reserve")
	peekScript        = loadScript("peek")
	ackScript         = loadScript("ack")
	abandonScript     = loadScript("abandon")
	nackScript        = loadScript("nack")
	touchScript       = loadScript("touch")
	releaseScript     = loadScript("release")
	cancelScript      = loadScript("cancel")
	rescheduleScript  = loadScript("reschedule")
	getScript         = loadScript("get")
	statsScript       = loadScript("stats")
	deadListScript    = loadScript("dead_list")
	listScript        = loadScript("list")
	deadRequeueScript = loadScript("dead_requeue")
	deadDeleteScript  = loadScript("dead_delete")
	controlsScript    = loadScript("set_controls")
	purgeScript       = loadScript("purge")
)

// bareWithout names what the bare variants of reserve and ack leave out (see
// loadScriptWithout): mark_ended and the functions only it uses, whose closures the full
// scripts make on every call. A bare variant runs the calls given no ended marker
// (keys.Partition.Ended): the acks, or reserves with acks riding along, of unmarked leases
// only (lib.lua's held), whose jobs leave none.
var bareWithout = map[string][]string{
	"reserve": {"mark_ended"},
	"ack":     {"mark_ended"},
}

var (
	reserveBareScript = loadScriptWithout("reserve", bareWithout["reserve"]...)
	ackBareScript     = loadScriptWithout("ack", bareWithout["ack"]...)
)

// Store runs delayq's scripts against one Redis deployment.
type Store struct {
	rdb redis.UniversalClient
	ns  string

	// clockOffset is added to the server's TIME in every script; tests set it to move time.
	clockOffset atomic.Int64

	// replayWindow is how long a script call's outcome is kept for a replay (see calls.go).
	replayWindow time.Duration

	// uniqueForMs is the unique_for of enqueued jobs with an id that name none, in topics
	// without a default of their own (see SetDefaultUniqueFor).
	uniqueForMs int64

	// waitReplicas, when above 0, is how many replicas must confirm an enqueue within
	// waitTimeout (see SetWaitReplicas).
	waitReplicas int
	waitTimeout  time.Duration

	// archive is ARGV[3] of every script: 0, or the history stream's bound (see SetArchive).
	archive atomic.Int64

	partKeys keyCache
}

// New returns a Store for keys under namespace ns.
func New(rdb redis.UniversalClient, ns string) *Store {
	return &Store{rdb: rdb, ns: ns, replayWindow: 30 * time.Second}
}

// Client returns the Redis client the store uses.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// EndsCallsAtDeadline reports whether rdb ends a call at its context's deadline: go-redis's
// ContextTimeoutEnabled, with read and write timeouts that let it set socket deadlines (a
// timeout of -2 sets none, and so ignores the context's too). Otherwise a hung Redis holds a
// call for the client's own timeouts and retries, whatever the context says. It is false for
// client types it does not know.
func EndsCallsAtDeadline(rdb redis.UniversalClient) bool {
	switch c := rdb.(type) {
	case *redis.Client:
		o := c.Options()
		return o.ContextTimeoutEnabled && setsDeadlines(o.ReadTimeout, o.WriteTimeout)
	case *redis.ClusterClient:
		o := c.Options()
		return o.ContextTimeoutEnabled && setsDeadlines(o.ReadTimeout, o.WriteTimeout)
	case *redis.Ring:
		o := c.Options()
		return o.ContextTimeoutEnabled && setsDeadlines(o.ReadTimeout, o.WriteTimeout)
	}
	return false
}

// setsDeadlines reports whether a client's read and write timeouts, as its Options return them,
// let it set socket deadlines. go-redis reads negative ones as "none" (-1, which a Client's
// options hold for -2) or "no deadline calls at all" (-2): some of them spare the context's
// deadline, but 0 and up are the ones that surely do not.
func setsDeadlines(read, write time.Duration) bool { return read >= 0 && write >= 0 }

// ClockOffset returns the offset set by SetClockOffset.
func (s *Store) ClockOffset() int64 { return s.clockOffset.Load() }

// SetClockOffset moves the clock every script sees by ms milliseconds (tests only).
func (s *Store) SetClockOffset(ms int64) { s.clockOffset.Store(ms) }

// SetReplayWindow sets how long a script call's outcome is kept, so that the same call sent
// again within it answers as the first did; 0 keeps none. Call it before the Store is used.
func (s *Store) SetReplayWindow(d time.Duration) { s.replayWindow = d }

// SetDefaultUniqueFor sets how long the id of a job enqueued with an id stays taken once the
// job ends, for jobs that name no unique_for in topics that have no default; 0 for not at all.
// Call it before the Store is used.
func (s *Store) SetDefaultUniqueFor(d time.Duration) { s.uniqueForMs = d.Milliseconds() }

// SetWaitReplicas makes EnqueueMany fail unless n replicas confirm its writes within timeout.
// Call it before the Store is used.
func (s *Store) SetWaitReplicas(n int, timeout time.Duration) {
	s.waitReplicas, s.waitTimeout = n, timeout
}

// SetArchive makes every script append the outcomes of jobs to their partition's history
// stream, keeping at most keep entries waiting there (the oldest are dropped and counted past
// it); failed adds each failed attempt that will be retried. keep 0 turns archiving off.
func (s *Store) SetArchive(keep int64, failed bool) {
	if failed {
		keep = -keep
	}
	s.archive.Store(keep)
}

// Archive returns the archive setting the scripts are passed now (ARGV[3]; see SetArchive):
// 0 while archiving is off.
func (s *Store) Archive() int64 { return s.archive.Load() }

// Partition returns the keys of partition n of topic.
func (s *Store) Partition(topic string, n int) keys.Partition { return keys.For(s.ns, topic, n) }

// script is one call of a script: its keys and its own arguments (from ARGV[4] on).
type script struct {
	// part is the partition a call of a partition's script is made in: the script takes those
	// of its keys it names (luaScript.keys), then extra. A call of a script of no partition
	// gives its keys in keys instead.
	part  keys.Partition
	extra []string
	keys  []string
	// call is the key of the call's record (Partition.Call), "" for a call that records none.
	call string
	args []any
	// records says whether the call records its outcome, which ARGV[2] then keeps for the window.
	records bool
	// variant, when set, is the script to run instead of the one the call is made with: a
	// variant of it that this call needs (upsertScript), or that is enough for it (a bare
	// one, see bareWithout).
	variant *luaScript
}

// read is a call of a script that changes nothing.
func read(p keys.Partition, args ...any) script { return script{part: p, args: args} }

// write is a call of a script that changes state, recorded under call id.
func write(p keys.Partition, call string, args ...any) script {
	return script{part: p, call: p.Call(call), args: args, records: true}
}

func (s *Store) argv(c script) []any {
	window := int64(0)
	if c.records {
		window = s.replayWindow.Milliseconds()
	}
	return append([]any{s.clockOffset.Load(), window, s.archive.Load()}, c.args...)
}

func (s *Store) run(ctx context.Context, sc *luaScript, c script) *redis.Cmd {
	sc = c.script(sc)
	return sc.Run(ctx, s.rdb, s.keysFor(c, sc), s.argv(c)...)
}

// script returns the script call c runs when made with sc.
func (c script) script(sc *luaScript) *luaScript {
	if c.variant != nil {
		return c.variant
	}
	return sc
}

// keysFor returns the KEYS of call c of script sc: the keys of c's partition that sc names, in
// its order, then c's extra keys; or c's keys, for a script of no partition. It panics when sc
// names the call's record and c has none: the keys after it would be off by one.
func (s *Store) keysFor(c script, sc *luaScript) []string {
	if sc.keys == nil {
		return c.keys
	}
	part := s.partKeys.of(c.part)
	out := make([]string, 0, len(sc.keys)+len(c.extra))
	for _, k := range sc.keys {
		if k < keys.Count {
			out = append(out, part[k])
		} else if c.call != "" {
			out = append(out, c.call)
		} else {
			panic("store: a call without a record of a script that records its calls")
		}
	}
	return append(out, c.extra...)
}

// keyCache holds the keys of the partitions a Store has called scripts in, so that a call
// does not build them anew: up to maxCachedParts partitions, past which keys are built per
// call (a process that sees more is no hot path for any one of them).
type keyCache struct {
	mu    sync.RWMutex
	parts map[keys.Partition]*[keys.Count]string
}

const maxCachedParts = 4096

// of returns the keys of partition p, in keys.Partition.Key's order.
func (c *keyCache) of(p keys.Partition) *[keys.Count]string {
	c.mu.RLock()
	k := c.parts[p]
	c.mu.RUnlock()
	if k != nil {
		return k
	}
	k = new([keys.Count]string)
	for i := range k {
		k[i] = p.Key(i)
	}
	c.mu.Lock()
	if c.parts == nil {
		c.parts = map[keys.Partition]*[keys.Count]string{}
	}
	if len(c.parts) < maxCachedParts {
		c.parts[p] = k
	}
	c.mu.Unlock()
	return k
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
	Headers    map[string]string // nil or validated: lower-case names, never empty
	MaxSnoozes int               // 0 for no limit
	// Print is the job's Fingerprint, stored as the record's last field, when a retry of its
	// enqueue may come: the caller named the id. Nil for a job whose id the enqueuer made,
	// which no retry can name: its record holds no fingerprint and its end leaves no marker.
	Print []byte
	// UniqueForMs is how long the job's id stays taken once it ends (a job with a Print only):
	// 0 takes the topic's default (TopicDefaults), else the enqueuer's (DefaultUniqueForMs);
	// below 0, none.
	UniqueForMs int64
	// OnConflict is what to do when the id exists: ConflictReject, ConflictKeep or
	// ConflictReplace (a job with a Print only).
	OnConflict int
}

// What an enqueue does when the job's id exists (NewJob.OnConflict).
const (
	ConflictReject  = 0 // ErrExists, unless the enqueue repeats the one that made the job
	ConflictKeep    = 1 // answer the job as it is (Added.Kept)
	ConflictReplace = 2 // a delayed or ready job takes the new one's fields in place (Added.Replaced)
)

// Added is the outcome of adding one job: its due time and creation time, or ErrExists. A job
// that an identical enqueue added within the replay window of its creation counts as added,
// with that enqueue's times, whatever became of it since when it has a fingerprint (else
// while it is still as that enqueue made it): repeating an enqueue whose answer was lost is
// safe, and runs nothing twice.
type Added struct {
	RunAtMs   int64
	CreatedMs int64
	Repeat    bool // an identical enqueue added the job earlier: these are its times
	// StoredTrace, for a Repeat whose stored trace headers differ from this call's, holds
	// them as stored: traceparent and tracestate, "" for one the job lacks.
	StoredTrace []string
	// UniqueForMs, for a job added with no unique_for of its own, is the default it took (0 for
	// none).
	UniqueForMs int64
	// Kept and Replaced say that the id existed and the job was kept as it was, or replaced
	// (NewJob.OnConflict): Job is the job as it is now.
	Kept, Replaced bool
	Job            *Record
	Err            error
}

// Enqueued is the outcome of one partition's enqueue call: the server's time and each job's
// outcome in order, or Err when the call failed (then nothing is known of its jobs).
type Enqueued struct {
	NowMs int64
	Jobs  []Added
	Err   error
}

// EnqueueMany adds jobs to several partitions, one script call each, in one round trip, and
// returns each partition's outcome: one partition's failure leaves the others' as they are.
func (s *Store) EnqueueMany(ctx context.Context, parts []keys.Partition, jobs [][]NewJob) []Enqueued {
	cmds, errs := s.pipelined(ctx, enqueueScript, len(parts), func(i int) script {
		return s.enqueueCall(parts[i], jobs[i])
	})
	out := make([]Enqueued, len(parts))
	for i, cmd := range cmds {
		if errs[i] != nil {
			out[i].Err = errs[i]
			continue
		}
		out[i].NowMs, out[i].Jobs, out[i].Err = parseEnqueue(cmd, len(jobs[i]))
	}
	return out
}

// pipelined runs script sc n times in one pipeline and returns each call's command and error.
// Calls that find the server's script cache empty (after a restart, a failover or SCRIPT
// FLUSH) ran nothing, so they alone are sent again with the script's text.
func (s *Store) pipelined(ctx context.Context, sc *luaScript, n int, call func(i int) script) ([]*redis.Cmd, []error) {
	// Enqueues are confirmed by replicas when asked: WAIT covers the writes of its own
	// connection only, so it ends each pipeline that carried them.
	confirm := sc == enqueueScript && s.waitReplicas > 0
	if n == 1 && !confirm {
		// One call goes straight out: a pipeline of one costs a pipeline's setup for nothing.
		cmd := s.run(ctx, sc, call(0))
		return []*redis.Cmd{cmd}, []error{callError(cmd)}
	}
	var waits []*redis.IntCmd
	cmds := make([]*redis.Cmd, n)
	calls := make([]script, n)
	pending := make([]int, n)
	for i := range pending {
		pending[i] = i
		calls[i] = call(i)
	}
	for _, eval := range []bool{false, true} {
		if len(pending) == 0 {
			break
		}
		_, _ = s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for _, i := range pending {
				c := calls[i]
				run := c.script(sc)
				if eval {
					cmds[i] = run.Eval(ctx, pipe, s.keysFor(c, run), s.argv(c)...)
				} else {
					cmds[i] = run.EvalSha(ctx, pipe, s.keysFor(c, run), s.argv(c)...)
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
	errs := make([]error, n)
	for i, c := range cmds {
		errs[i] = callError(c)
	}
	for _, w := range waits {
		n, err := w.Result()
		switch {
		case err != nil:
			err = fmt.Errorf("delayq: waiting for replicas: %w", err)
		case n < int64(s.waitReplicas):
			err = fmt.Errorf("delayq: %d of %d replicas confirmed the write within %v", n, s.waitReplicas, s.waitTimeout)
		}
		if err != nil {
			for i := range errs {
				if errs[i] == nil {
					errs[i] = err
				}
			}
		}
	}
	return cmds, errs
}

// callError is the error of a script call, nil when it answered (redis.Nil included).
func callError(cmd *redis.Cmd) error {
	if err := cmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("delayq: %w", err)
	}
	return nil
}

// enqueueCall is the call of enqueue.lua that adds jobs to partition p. A call of one job whose
// id the enqueuer made (no Print), due after a delay no shorter than the replay window, is named
// after the job (lone, see enqueue.lua), and records nothing: while the job exists, its record
// answers a second run of the call. (Two calls that drew the same id for identical jobs, 2^-80
// per pair in one millisecond, are then taken for one; a job due sooner keeps a call record
// under a call id of its own, which tells them apart.)
func (s *Store) enqueueCall(p keys.Partition, jobs []NewJob) script {
	window := s.replayWindow.Milliseconds()
	lone := len(jobs) == 1 && jobs[0].Print == nil && jobs[0].RunAtMs == 0 && window > 0 && jobs[0].DelayMs >= window
	var call string
	if lone {
		call = jobs[0].ID
	} else {
		call = NewCallID()
	}
	c := write(p, call, s.enqueueArgs(jobs, lone)...)
	for _, j := range jobs {
		if j.Print != nil {
			c.extra = append(c.extra, p.Ended(j.ID))
		}
		if j.OnConflict != ConflictReject {
			c.variant = upsertScript
		}
	}
	return c
}

func (s *Store) enqueueArgs(jobs []NewJob, lone bool) []any {
	args := make([]any, 0, 3+5*len(jobs))
	kinds := make([]byte, len(jobs))
	defaulted := false
	for i, j := range jobs {
		kind := byte(0)
		if j.Callback != "" {
			kind++
		}
		if j.Print != nil {
			kind += 2 // the fingerprint ends the tail
			if j.UniqueForMs == 0 {
				kind += 4
				defaulted = true
			}
			kind += 8 * byte(j.OnConflict)
		}
		if lone {
			kind += 32
		}
		kinds[i] = '0' + kind
	}
	args = append(args, len(jobs), string(kinds))
	for _, j := range jobs {
		delay, at := strconv.FormatInt(j.DelayMs, 10), ""
		if j.RunAtMs != 0 {
			delay, at = "", strconv.FormatInt(j.RunAtMs, 10)
		}
		args = append(args, j.ID, delay, at, recordHead(j), recordTail(j))
	}
	if defaulted && s.uniqueForMs > 0 {
		args = append(args, s.uniqueForMs)
	}
	return args
}

// stateNames names the states scripts report.
var stateNames = map[int64]string{StateDelayed: "delayed", StateReady: "ready", StateReserved: "reserved", StateDead: "dead"}

// Script statuses of an enqueued job (enqueue.lua).
const (
	addedExists   = 0
	addedNew      = 1
	addedRepeat   = 2
	addedDone     = 3
	addedKept     = 4
	addedWrong    = 5
	addedReplaced = 6
)

func parseEnqueue(cmd *redis.Cmd, n int) (int64, []Added, error) {
	raw, err := cmd.Slice()
	if err != nil {
		return 0, nil, fmt.Errorf("delayq: enqueue: %w", err)
	}
	var traces, jobs []any
	switch len(raw) - (1 + 3*n) {
	case 2:
		jobs, _ = raw[len(raw)-1].([]any)
		raw = raw[:len(raw)-1]
		fallthrough
	case 1:
		traces, _ = raw[len(raw)-1].([]any)
		raw = raw[:len(raw)-1]
	}
	if len(raw) != 1+3*n || len(traces)%3 != 0 || len(jobs)%2 != 0 {
		return 0, nil, fmt.Errorf("delayq: enqueue: %d values in reply, want %d", len(raw), 1+3*n)
	}
	vals := make([]int64, len(raw))
	for i, v := range raw {
		var ok bool
		if vals[i], ok = v.(int64); !ok {
			return 0, nil, fmt.Errorf("delayq: enqueue: reply value %d is %T, not an integer", i, v)
		}
	}
	out := make([]Added, n)
	for i := range out {
		v := vals[1+3*i:]
		switch v[0] {
		case addedNew:
			out[i].RunAtMs, out[i].CreatedMs, out[i].UniqueForMs = v[1], vals[0], v[2]
			continue
		case addedExists:
			out[i].Err = ErrExists
		case addedRepeat:
			out[i].Repeat = true
		case addedDone:
			out[i].Err = &DoneError{Outcome: endOutcome(v[1]), EndedMs: v[2]}
			continue
		case addedKept:
			out[i].Kept = true
		case addedReplaced:
			out[i].Replaced = true
		case addedWrong:
			out[i].Err = fmt.Errorf("%w: a replace needs a delayed or ready job, and this one is %s", ErrWrongState, stateNames[v[1]])
			continue
		}
		out[i].RunAtMs, out[i].CreatedMs = v[1], v[2]
	}
	for k := 0; k < len(traces); k += 3 {
		i := toInt(traces[k])
		if i < 0 || i >= int64(n) || !out[i].Repeat {
			return 0, nil, fmt.Errorf("delayq: enqueue: a stored trace for job %d, not a repeat", i)
		}
		out[i].StoredTrace = []string{toString(traces[k+1]), toString(traces[k+2])}
	}
	for k := 0; k < len(jobs); k += 2 {
		i := toInt(jobs[k])
		if i < 0 || i >= int64(n) || !(out[i].Kept || out[i].Replaced) {
			return 0, nil, fmt.Errorf("delayq: enqueue: a job for %d, not kept nor replaced", i)
		}
		r, err := parseRecord(jobs[k+1])
		if err != nil {
			return 0, nil, err
		}
		out[i].Job = &r
		out[i].RunAtMs, out[i].CreatedMs = r.RunAtMs, r.CreatedMs
	}
	for i, a := range out {
		if (a.Kept || a.Replaced) && a.Job == nil {
			return 0, nil, fmt.Errorf("delayq: enqueue: job %d kept or replaced, but not returned", i)
		}
	}
	return vals[0], out, nil
}

// Cancel deletes a job in any state. A job cancelled since its creation within the replay
// window answers nil again (a cancel retried after a lost answer); one acked, or dead and
// deleted, within it is an *EndedError; any other missing job ErrNotFound.
func (s *Store) Cancel(ctx context.Context, p keys.Partition, id string) error {
	c := write(p, NewCallID(), id)
	c.extra = append(c.extra, p.Ended(id), p.Call(id))
	v, err := s.run(ctx, cancelScript, c).Result()
	if err != nil {
		return fmt.Errorf("delayq: cancel: %w", err)
	}
	if ended, ok := v.([]any); ok && len(ended) == 2 {
		return &EndedError{Outcome: endOutcome(toInt(ended[0])), EndedMs: toInt(ended[1])}
	}
	if toInt(v) == 0 {
		return ErrNotFound
	}
	return nil
}

// EndedError is what became of a job that ended within the replay window of its creation,
// from its ended marker (keys.Partition.Ended). It matches ErrNotFound: the job is gone.
type EndedError struct {
	Outcome string // "acked", "dead" (dead, then deleted) or "cancelled"
	EndedMs int64  // when, Unix ms
}

func (e *EndedError) Error() string { return "delayq: job already ended: " + e.Outcome }

// Is makes errors.Is(err, ErrNotFound) true.
func (e *EndedError) Is(target error) bool { return target == ErrNotFound }

// DoneError is what an enqueue or a read of an id meets when a job with that id ended within
// its unique_for: how it ended and when. It matches ErrDone.
type DoneError struct {
	Outcome string // "acked", "dead" or "cancelled"
	EndedMs int64  // when, Unix ms
}

func (e *DoneError) Error() string { return "delayq: job already done: " + e.Outcome }

// Is makes errors.Is(err, ErrDone) true.
func (e *DoneError) Is(target error) bool { return target == ErrDone }

// endOutcome names an outcome of lib.lua's END_ values.
func endOutcome(code int64) string {
	switch code {
	case 1:
		return "acked"
	case 2:
		return "dead"
	case 3:
		return "cancelled"
	}
	return fmt.Sprintf("ended (%d)", code)
}

// Reschedule moves a delayed or ready job: to now+ms when relative, else to Unix ms.
func (s *Store) Reschedule(ctx context.Context, p keys.Partition, id string, relative bool, ms int64) (Record, error) {
	mode := "at"
	if relative {
		mode = "delay"
	}
	c := write(p, NewCallID(), id, mode, ms)
	c.extra = append(c.extra, p.Call(id))
	vals, err := s.run(ctx, rescheduleScript, c).Slice()
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
	c := read(p, id)
	c.extra = append(c.extra, p.Ended(id))
	v, err := s.run(ctx, getScript, c).Result()
	if errors.Is(err, redis.Nil) {
		return Record{}, ErrNotFound
	}
	if err != nil {
		return Record{}, fmt.Errorf("delayq: get: %w", err)
	}
	if ended, ok := v.([]any); ok && len(ended) == 2 {
		return Record{}, &DoneError{Outcome: endOutcome(toInt(ended[0])), EndedMs: toInt(ended[1])}
	}
	return parseRecord(v)
}

// Counts are one partition's jobs by state.
type Counts struct {
	NowMs, Delayed, Ready, Reserved, Dead int64
	EarliestMs                            int64 // earliest pending due time; -1 for none
	OldestReadyMs                         int64 // when the oldest ready job became ready (Unix ms); -1 for none
	Paused                                bool  // the partition hands out nothing (SetPaused)
	Limits                                Limits
	LeasesExpired                         int64 // leases expired in the partition so far
	UniqueForMs                           int64 // the topic's default unique_for; -1 when it sets none
}

// Stats counts the jobs of each partition in parts, in one pipelined round trip.
func (s *Store) Stats(ctx context.Context, parts []keys.Partition) ([]Counts, error) {
	cmds, errs := s.pipelined(ctx, statsScript, len(parts), func(i int) script {
		return read(parts[i])
	})
	out := make([]Counts, len(parts))
	for i, cmd := range cmds {
		if errs[i] != nil {
			return nil, errs[i]
		}
		v, err := cmd.Int64Slice()
		if err == nil && len(v) != 13 {
			err = errors.New("malformed reply")
		}
		if err != nil {
			return nil, fmt.Errorf("delayq: stats: %d values: %w", len(v), err)
		}
		out[i] = Counts{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7] == 1,
			Limits{Rate: int(v[8]), PeriodMs: v[9], Concurrency: int(v[10])}, v[11], v[12]}
	}
	return out, nil
}
