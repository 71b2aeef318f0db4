package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/keys"
)

// Lane selects the ready set a reserve takes from.
type Lane string

// Lanes: pull consumers take jobs without a callback URL, the webhook dispatcher those with one.
const (
	LanePull Lane = "pull"
	LanePush Lane = "push"
)

// Lease names a leased job.
type Lease struct{ ID, Token string }

// ReserveCall is one reserve script call. Sent again unchanged (same Call), it answers as the
// first did: the same jobs, as long as their leases are still the ones it gave.
type ReserveCall struct {
	Call     string // the call id, from NewCallID
	Secret   string // random per call: each job's lease token is derived from it and the job id
	Lane     Lane
	Max      int   // the most jobs to lease
	MaxBytes int64 // the most record bytes to lease; 0 for no bound; the first job is always taken
	Bulk     int   // the most promotions and lease expiries the call does
	TTRMs    int64 // a lease length for every job; 0 for each job's own
	Acks     []Lease
}

// Reserved is what a reserve call returns.
type Reserved struct {
	NowMs  int64
	NextMs int64   // the partition's next due time or lease deadline; NowMs when more are due; -1 for none
	Paused bool    // the topic is paused: nothing is handed out until it resumes (NextMs is -1)
	Acked  []error // per lease acked along with the reserve: nil or ErrLeaseLost
	Jobs   []Record
}

// Reserve acks rc.Acks, then leases up to rc.Max due jobs of partition p from rc.Lane, first
// failing expired leases and promoting due jobs, at most rc.Bulk of each.
func (s *Store) Reserve(ctx context.Context, p keys.Partition, rc ReserveCall) (Reserved, error) {
	args := make([]any, 0, 6+2*len(rc.Acks))
	args = append(args, string(rc.Lane), rc.Max, rc.MaxBytes, rc.Secret, rc.Bulk, rc.TTRMs)
	args = appendLeases(args, rc.Acks)
	c := write(p, rc.Call, args...)
	c.extra = appendEnded(c.extra, p, rc.Acks)
	if len(c.extra) == 0 {
		c.variant = reserveBareScript
	}
	vals, err := s.run(ctx, reserveScript, c).Slice()
	if err != nil {
		return Reserved{}, fmt.Errorf("delayq: reserve: %w", err)
	}
	if len(vals) < 3 {
		return Reserved{}, fmt.Errorf("delayq: reserve: short reply")
	}
	r := Reserved{NowMs: toInt(vals[0])}
	r.NextMs, r.Paused = nextOf(toInt(vals[1]))
	if r.Acked, err = parseAcked(vals[2], len(rc.Acks)); err != nil {
		return Reserved{}, err
	}
	r.Jobs, err = parseRecords(vals[3:])
	return r, err
}

// Abandon undoes reserve call rc, whose answer was never read: the jobs it leased are put back
// as if never leased, and if it has not run yet it never will. It reports whether the call had
// run and, if so, how its acks went; if it had not, they did not happen.
func (s *Store) Abandon(ctx context.Context, p keys.Partition, rc ReserveCall) (ran bool, acked []error, err error) {
	vals, err := s.run(ctx, abandonScript, write(p, rc.Call, rc.Secret)).Slice()
	if err != nil {
		return false, nil, fmt.Errorf("delayq: abandoning a reserve: %w", err)
	}
	if len(vals) == 0 || toInt(vals[0]) == 0 {
		return false, nil, nil
	}
	if len(vals) < 2 {
		return false, nil, fmt.Errorf("delayq: abandoning a reserve: short reply")
	}
	acked, err = parseAcked(vals[1], len(rc.Acks))
	return true, acked, err
}

// AckMany removes reserved jobs, one script call per partition, all in one round trip. It
// returns for each lease nil or ErrLeaseLost, in order, and for each partition the error of its
// call (then its leases' outcomes are unknown). An ack of a lease acked before within the replay
// window answers nil again.
func (s *Store) AckMany(ctx context.Context, parts []keys.Partition, leases [][]Lease) ([][]error, []error) {
	cmds, errs := s.pipelined(ctx, ackScript, len(parts), func(i int) script {
		c := read(parts[i], appendLeases(make([]any, 0, 2*len(leases[i])), leases[i])...)
		for _, l := range leases[i] {
			c.extra = append(c.extra, parts[i].Call(leaseCallID("ack", l.ID, l.Token)))
		}
		n := len(c.extra)
		c.extra = appendEnded(c.extra, parts[i], leases[i])
		if len(c.extra) == n {
			c.variant = ackBareScript
		}
		c.records = true
		return c
	})
	out := make([][]error, len(parts))
	for i, cmd := range cmds {
		if errs[i] != nil {
			continue
		}
		v, err := cmd.Result()
		if err == nil {
			out[i], err = parseAcked(v, len(leases[i]))
		}
		if err != nil {
			errs[i] = fmt.Errorf("delayq: ack: %w", err)
		}
	}
	return out, errs
}

// appendEnded appends to keys the ended markers (keys.Partition.Ended) of the jobs of leases
// that may leave one when acked: those of marked leases.
func appendEnded(keys []string, p keys.Partition, leases []Lease) []string {
	for _, l := range leases {
		if markedLease(l.Token) {
			keys = append(keys, p.Ended(l.ID))
		}
	}
	return keys
}

// markedLease tells whether token is a marked lease token (lib.lua's held): its job's record
// may hold a fingerprint, so its ack may leave an ended marker. Any other ack (a job whose id
// the enqueuer made) needs no marker's key, nor a read of its record.
func markedLease(token string) bool { return strings.HasSuffix(token, "+") }

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
// whether the job went to the dead letters. Nacking a lease again within the replay window
// answers as the first nack did.
func (s *Store) Nack(ctx context.Context, p keys.Partition, id, lease, errText string, delayMs int64, dead bool) (bool, error) {
	return s.nack(ctx, p, id, lease, errText, delayMs, dead, "")
}

// Bury sends a leased job to the dead letters with a new stored priority (RankBase plus a
// beanstalkd priority, say), as a Nack with dead set would.
func (s *Store) Bury(ctx context.Context, p keys.Partition, id, lease string, priority int) error {
	_, err := s.nack(ctx, p, id, lease, "", -1, true, strconv.Itoa(priority))
	return err
}

func (s *Store) nack(ctx context.Context, p keys.Partition, id, lease, errText string, delayMs int64, dead bool, priority string) (bool, error) {
	delay, buried := "", "0"
	if delayMs >= 0 {
		delay = strconv.FormatInt(delayMs, 10)
	}
	if dead {
		buried = "1"
	}
	n, err := s.run(ctx, nackScript, write(p, leaseCallID("nack", id, lease), id, lease, errText, delay, buried, priority)).Int64()
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
	deadline, err := s.run(ctx, touchScript, write(p, NewCallID(), id, lease, ttrMs)).Int64()
	if err != nil {
		return 0, fmt.Errorf("delayq: touch: %w", err)
	}
	if deadline == 0 {
		return 0, ErrLeaseLost
	}
	return deadline, nil
}

// Release gives a lease back unfinished, its attempt not counted: the job is due again after
// delayMs, or at runAtMs when that is not 0. A snooze (the consumer's choice) counts in the
// job's snoozes, and past its max snoozes sends it to the dead letters instead; Release reports
// whether it did. Releasing a lease again within the replay window answers as the first release
// did.
func (s *Store) Release(ctx context.Context, p keys.Partition, id, lease string, delayMs, runAtMs int64, snooze bool) (bool, error) {
	return s.release(ctx, p, id, lease, delayMs, runAtMs, snooze, "")
}

// ReleaseLater gives a lease back unfinished, due again after delayMs and with a new stored
// priority (RankBase plus a beanstalkd priority, say), its attempt not counted; a release with
// a delay is a snooze, as Release's.
func (s *Store) ReleaseLater(ctx context.Context, p keys.Partition, id, lease string, delayMs int64, priority int) (bool, error) {
	return s.release(ctx, p, id, lease, delayMs, 0, delayMs > 0, strconv.Itoa(priority))
}

func (s *Store) release(ctx context.Context, p keys.Partition, id, lease string, delayMs, runAtMs int64, snooze bool, priority string) (bool, error) {
	flag, runAt := "0", ""
	if snooze {
		flag = "1"
	}
	if runAtMs != 0 {
		runAt = strconv.FormatInt(runAtMs, 10)
	}
	n, err := s.run(ctx, releaseScript, write(p, leaseCallID("release", id, lease), id, lease, delayMs, priority, flag, runAt)).Int64()
	if err != nil {
		return false, fmt.Errorf("delayq: release: %w", err)
	}
	if n == 0 {
		return false, ErrLeaseLost
	}
	return n == 2, nil
}

// Peeked is what a look at one partition's lane found.
type Peeked struct {
	NowMs  int64
	NextMs int64     // as Reserved's
	Paused bool      // as Reserved's
	Scores []float64 // the ready scores of its first jobs, best (lowest) first
	IDs    []string  // those jobs' ids: of equal scores, the lower id goes first
	Err    error     // the partition's call failed; the other fields are zero
}

// Peek reads the ready scores of up to n first jobs of lane in each partition, in one round
// trip, after failing expired leases and promoting due jobs (at most bulk of each) as a reserve
// would: a reserve over several partitions compares them to take the best jobs of all.
func (s *Store) Peek(ctx context.Context, parts []keys.Partition, lane Lane, n, bulk int) []Peeked {
	cmds, errs := s.pipelined(ctx, peekScript, len(parts), func(i int) script {
		return read(parts[i], string(lane), n, bulk)
	})
	out := make([]Peeked, len(parts))
	for i, cmd := range cmds {
		if errs[i] != nil {
			out[i].Err = fmt.Errorf("delayq: looking at a partition: %w", errs[i])
			continue
		}
		vals, err := cmd.Slice()
		if err == nil && len(vals) < 2 {
			err = errors.New("short reply")
		}
		if err != nil {
			out[i].Err = fmt.Errorf("delayq: looking at a partition: %w", err)
			continue
		}
		out[i].NowMs = toInt(vals[0])
		out[i].NextMs, out[i].Paused = nextOf(toInt(vals[1]))
		for k := 2; k+1 < len(vals); k += 2 {
			f, err := strconv.ParseFloat(toString(vals[k]), 64)
			if err != nil {
				out[i].Err = fmt.Errorf("delayq: looking at a partition: score %q: %w", toString(vals[k]), err)
				break
			}
			out[i].Scores = append(out[i].Scores, f)
			out[i].IDs = append(out[i].IDs, toString(vals[k+1]))
		}
	}
	return out
}

var reserveJobScript = loadScript("reserve_job")

// ReserveJob leases job id in any state but reserved, for its TTR, whatever the topic's pause
// and limits (beanstalkd's reserve-job). A job that does not exist or is reserved is
// ErrNotFound. Each call makes its own lease secret, so a replay answers the same lease.
func (s *Store) ReserveJob(ctx context.Context, p keys.Partition, id string) (Record, error) {
	c := write(p, NewCallID(), id, NewCallID())
	c.extra = append(c.extra, p.Call(id))
	v, err := s.run(ctx, reserveJobScript, c).Result()
	if errors.Is(err, redis.Nil) {
		return Record{}, ErrNotFound
	}
	if err != nil {
		return Record{}, fmt.Errorf("delayq: reserve job: %w", err)
	}
	return parseRecord(v)
}

var expireScript = loadScript("expire")

// Expired is what one partition's expiry call found.
type Expired struct {
	NowMs  int64
	NextMs int64 // the partition's first lease deadline left; NowMs when more have expired; -1 for none
	Count  int   // leases this call expired
	Err    error // the partition's call failed; the other fields are zero
}

// ExpireLeases fails the expired leases of each partition in parts, at most bulk each, in one
// round trip, as a reserve does before it leases, and returns each partition's first lease
// deadline left.
func (s *Store) ExpireLeases(ctx context.Context, parts []keys.Partition, bulk int) []Expired {
	cmds, errs := s.pipelined(ctx, expireScript, len(parts), func(i int) script {
		return read(parts[i], bulk)
	})
	out := make([]Expired, len(parts))
	for i, cmd := range cmds {
		if errs[i] != nil {
			out[i].Err = fmt.Errorf("delayq: expiring leases: %w", errs[i])
			continue
		}
		v, err := cmd.Int64Slice()
		if err == nil && len(v) != 3 {
			err = errors.New("malformed reply")
		}
		if err != nil {
			out[i].Err = fmt.Errorf("delayq: expiring leases: %w", err)
			continue
		}
		out[i] = Expired{NowMs: v[0], NextMs: v[1], Count: int(v[2])}
	}
	return out
}
