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

var (
	beanstalkdIssueScript  = loadScript("beanstalkd_issue")
	beanstalkdAliasScript  = loadScript("beanstalkd_alias")
	beanstalkdBuriedScript = loadScript("beanstalkd_buried")
)

// BeanstalkdJob is the job a beanstalkd id names: its topic and delayq id.
type BeanstalkdJob struct {
	Topic, ID string
}

// BeanstalkdIDWidth is the width of the fixed-width decimal form of a beanstalkd id, which is
// the delayq id of a job put through the front end: ids of equal width sort as numbers do.
const BeanstalkdIDWidth = 20

// BeanstalkdJobID returns the delayq id of the job put through the front end with id n.
func BeanstalkdJobID(n uint64) string {
	return fmt.Sprintf("%0*d", BeanstalkdIDWidth, n)
}

// indexed is how keys.Beanstalkd.Jobs stores j: its topic alone when its id is n's fixed-width
// form, else the topic and the id.
func (j BeanstalkdJob) indexed(n uint64) string {
	if n != 0 && j.ID == BeanstalkdJobID(n) {
		return j.Topic
	}
	return j.Topic + "\x00" + j.ID
}

func (s *Store) beanstalkd() keys.Beanstalkd { return keys.BeanstalkdFor(s.ns) }

// IssueBeanstalkdIDs issues the ids of jobs the front end is about to put, one per topic
// given, in order, and indexes them: the first id is returned, the others follow it. The delayq
// id of each job is then BeanstalkdJobID of its id. A replay answers the same ids.
func (s *Store) IssueBeanstalkdIDs(ctx context.Context, topics []string) (uint64, error) {
	b := s.beanstalkd()
	args := make([]any, len(topics))
	for i, t := range topics {
		args[i] = t
	}
	c := script{keys: []string{b.IDs(), b.Jobs(), b.Counts(), b.Call(NewCallID())}, args: args, records: true}
	n, err := s.run(ctx, beanstalkdIssueScript, c).Uint64()
	if err != nil {
		return 0, fmt.Errorf("delayq: issuing beanstalkd ids: %w", err)
	}
	return n, nil
}

// BeanstalkdAlias returns the beanstalkd id of job j, enqueued elsewhere: the one issued when a
// beanstalkd client first met it, or a new one.
func (s *Store) BeanstalkdAlias(ctx context.Context, j BeanstalkdJob) (uint64, error) {
	b := s.beanstalkd()
	c := script{keys: []string{b.IDs(), b.Jobs(), b.Aliases()}, args: []any{j.indexed(0)}}
	n, err := s.run(ctx, beanstalkdAliasScript, c).Uint64()
	if err != nil {
		return 0, fmt.Errorf("delayq: issuing a beanstalkd id: %w", err)
	}
	return n, nil
}

// BeanstalkdLookup returns the job beanstalkd id n names, or ErrNotFound.
func (s *Store) BeanstalkdLookup(ctx context.Context, n uint64) (BeanstalkdJob, error) {
	v, err := s.rdb.HGet(ctx, s.beanstalkd().Jobs(), strconv.FormatUint(n, 10)).Result()
	if errors.Is(err, redis.Nil) {
		return BeanstalkdJob{}, ErrNotFound
	}
	if err != nil {
		return BeanstalkdJob{}, fmt.Errorf("delayq: looking up beanstalkd id %d: %w", n, err)
	}
	if topic, id, ok := strings.Cut(v, "\x00"); ok {
		return BeanstalkdJob{Topic: topic, ID: id}, nil
	}
	return BeanstalkdJob{Topic: v, ID: BeanstalkdJobID(n)}, nil
}

// ForgetBeanstalkdID drops beanstalkd id n, which names j, from the index: the job is gone.
func (s *Store) ForgetBeanstalkdID(ctx context.Context, n uint64, j BeanstalkdJob) error {
	return s.forgetBeanstalkdID(ctx, n, j, false)
}

// BeanstalkdDeleted forgets beanstalkd id n, which names j, and counts a delete in its tube,
// in one round trip: a beanstalkd client deleted the job.
func (s *Store) BeanstalkdDeleted(ctx context.Context, n uint64, j BeanstalkdJob) error {
	return s.forgetBeanstalkdID(ctx, n, j, true)
}

func (s *Store) forgetBeanstalkdID(ctx context.Context, n uint64, j BeanstalkdJob, deleted bool) error {
	b := s.beanstalkd()
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if deleted {
			p.HIncrBy(ctx, b.Counts(), BeanstalkdTubeCounter(j.Topic, "delete"), 1)
		}
		p.HDel(ctx, b.Jobs(), strconv.FormatUint(n, 10))
		p.HDel(ctx, b.Counts(), BeanstalkdJobCounter(n, "releases"), BeanstalkdJobCounter(n, "buries"),
			BeanstalkdJobCounter(n, "kicks"), BeanstalkdJobCounter(n, "delay"), BeanstalkdJobCounter(n, "attempts"),
			BeanstalkdJobCounter(n, "burial"), BeanstalkdJobCounter(n, "returns"))
		if j.ID != BeanstalkdJobID(n) {
			p.HDel(ctx, b.Aliases(), j.indexed(0))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delayq: forgetting beanstalkd id %d: %w", n, err)
	}
	return nil
}

// BeanstalkdTube returns the tube name stored for topic (see keys.Beanstalkd.Tubes), or "".
func (s *Store) BeanstalkdTube(ctx context.Context, topic string) (string, error) {
	v, err := s.rdb.HGet(ctx, s.beanstalkd().Tubes(), topic).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("delayq: reading a tube name: %w", err)
	}
	return v, nil
}

// SetBeanstalkdTube stores the tube name of a topic named from the tube's hash.
func (s *Store) SetBeanstalkdTube(ctx context.Context, topic, tube string) error {
	if err := s.rdb.HSetNX(ctx, s.beanstalkd().Tubes(), topic, tube).Err(); err != nil {
		return fmt.Errorf("delayq: storing a tube name: %w", err)
	}
	return nil
}

// BeanstalkdJobCounter names counter name of beanstalkd job n: releases, buries, kicks; delay,
// the delay in seconds it was last put or released with; attempts, the failed attempts it had
// before kicks from the buried (a requeue of a dead job starts its attempts afresh); burial,
// the order of its last burial among all (NoteBurial); returns, its reserves that ended with
// the connection that held it.
func BeanstalkdJobCounter(n uint64, name string) string {
	return "j:" + strconv.FormatUint(n, 10) + ":" + name
}

// BeanstalkdTubeCounter names counter name (put, delete, pause) of the tube stored as topic.
func BeanstalkdTubeCounter(topic, name string) string { return "t:" + topic + ":" + name }

// CountBeanstalkd adds delta to a counter of the front end (BeanstalkdJobCounter,
// BeanstalkdTubeCounter). Counters are statistics: a replay may count twice.
func (s *Store) CountBeanstalkd(ctx context.Context, counter string, delta int64) error {
	if err := s.rdb.HIncrBy(ctx, s.beanstalkd().Counts(), counter, delta).Err(); err != nil {
		return fmt.Errorf("delayq: counting %s: %w", counter, err)
	}
	return nil
}

// SetBeanstalkdCounter sets a counter of the front end to v.
func (s *Store) SetBeanstalkdCounter(ctx context.Context, counter string, v uint64) error {
	if err := s.rdb.HSet(ctx, s.beanstalkd().Counts(), counter, v).Err(); err != nil {
		return fmt.Errorf("delayq: setting %s: %w", counter, err)
	}
	return nil
}

// BeanstalkdCounters reads counters of the front end; a missing one is 0.
func (s *Store) BeanstalkdCounters(ctx context.Context, counters ...string) ([]uint64, error) {
	vals, err := s.rdb.HMGet(ctx, s.beanstalkd().Counts(), counters...).Result()
	if err != nil {
		return nil, fmt.Errorf("delayq: reading counters: %w", err)
	}
	out := make([]uint64, len(vals))
	for i, v := range vals {
		if str, ok := v.(string); ok {
			out[i], _ = strconv.ParseUint(str, 10, 64)
		}
	}
	return out, nil
}

// BeanstalkdPutCounter counts every put.
const BeanstalkdPutCounter = "put"

// UrgentReady counts the ready jobs of topic's partitions ranked by a beanstalkd priority
// below 1024, which beanstalkd calls urgent (due jobs not yet moved to the ready set aside).
func (s *Store) UrgentReady(ctx context.Context, topic string, partitions int) (uint64, error) {
	cmds := make([]*redis.IntCmd, partitions)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range cmds {
			cmds[i] = p.ZCount(ctx, s.Partition(topic, i).Ready(), "0", "1023")
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delayq: counting urgent jobs: %w", err)
	}
	var n uint64
	for _, c := range cmds {
		n += uint64(c.Val())
	}
	return n, nil
}

// NoteBurial notes that beanstalkd job n was just buried: its burial counter gets the next
// number, so that jobs buried in the same millisecond are kicked in the order they were
// buried.
func (s *Store) NoteBurial(ctx context.Context, n uint64) error {
	c := script{keys: []string{s.beanstalkd().Counts()}, args: []any{BeanstalkdJobCounter(n, "burial")}}
	if err := s.run(ctx, beanstalkdBuriedScript, c).Err(); err != nil {
		return fmt.Errorf("delayq: noting a burial: %w", err)
	}
	return nil
}

var kickDelayedScript = loadScript("kick_delayed")

// KickDelayed makes the jobs of ids (all of partition p) that are still delayed ready at once,
// and returns those it moved.
func (s *Store) KickDelayed(ctx context.Context, p keys.Partition, ids []string) ([]string, error) {
	args := make([]any, len(ids))
	calls := make([]string, len(ids))
	for i, id := range ids {
		args[i], calls[i] = id, p.Call(id)
	}
	c := write(p, NewCallID(), args...)
	c.extra = calls
	vals, err := s.run(ctx, kickDelayedScript, c).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("delayq: kick: %w", err)
	}
	return vals, nil
}

// CountBeanstalkdEach adds 1 to each counter of the front end, in one round trip.
func (s *Store) CountBeanstalkdEach(ctx context.Context, counters []string) error {
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range counters {
			p.HIncrBy(ctx, s.beanstalkd().Counts(), c, 1)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delayq: counting: %w", err)
	}
	return nil
}

// BeanstalkdPause is a pause-tube in force.
type BeanstalkdPause struct {
	UntilMs int64 // when it ends, Unix ms (this process's clock, as beanstalkd's)
	Length  int64 // as asked for, seconds
}

// SetBeanstalkdPause keeps the pause of the tube stored as topic.
func (s *Store) SetBeanstalkdPause(ctx context.Context, topic string, p BeanstalkdPause) error {
	v := strconv.FormatInt(p.UntilMs, 10) + " " + strconv.FormatInt(p.Length, 10)
	if err := s.rdb.HSet(ctx, s.beanstalkd().Pauses(), topic, v).Err(); err != nil {
		return fmt.Errorf("delayq: keeping a pause: %w", err)
	}
	return nil
}

// BeanstalkdPauses returns the pauses in force (or ended but not yet resumed), by topic.
func (s *Store) BeanstalkdPauses(ctx context.Context) (map[string]BeanstalkdPause, error) {
	m, err := s.rdb.HGetAll(ctx, s.beanstalkd().Pauses()).Result()
	if err != nil {
		return nil, fmt.Errorf("delayq: reading pauses: %w", err)
	}
	out := make(map[string]BeanstalkdPause, len(m))
	for topic, v := range m {
		until, length, _ := strings.Cut(v, " ")
		var p BeanstalkdPause
		p.UntilMs, _ = strconv.ParseInt(until, 10, 64)
		p.Length, _ = strconv.ParseInt(length, 10, 64)
		out[topic] = p
	}
	return out, nil
}

var beanstalkdUnpauseScript = loadScript("beanstalkd_unpause")

// EndBeanstalkdPause forgets the pause of topic if it is still the one that ended at untilMs
// (another pause-tube since has replaced it otherwise), and reports whether it did.
func (s *Store) EndBeanstalkdPause(ctx context.Context, topic string, untilMs int64) (bool, error) {
	c := script{keys: []string{s.beanstalkd().Pauses()}, args: []any{topic, untilMs}}
	n, err := s.run(ctx, beanstalkdUnpauseScript, c).Int()
	if err != nil {
		return false, fmt.Errorf("delayq: ending a pause: %w", err)
	}
	return n == 1, nil
}
