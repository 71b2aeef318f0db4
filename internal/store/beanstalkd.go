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

var beanstalkdIssueScript = loadScript("beanstalkd_issue")

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

// IssueBeanstalkdID issues the id of a job the front end is about to put into topic, whose
// delayq id is then BeanstalkdJobID of it, and indexes it. A replay answers the same id.
func (s *Store) IssueBeanstalkdID(ctx context.Context, topic string) (uint64, error) {
	return s.issue(ctx, topic)
}

// BeanstalkdAlias returns the beanstalkd id of job j, enqueued elsewhere: the one issued when a
// beanstalkd client first met it, or a new one.
func (s *Store) BeanstalkdAlias(ctx context.Context, j BeanstalkdJob) (uint64, error) {
	return s.issue(ctx, j.indexed(0))
}

func (s *Store) issue(ctx context.Context, job string) (uint64, error) {
	b := s.beanstalkd()
	c := script{keys: []string{b.IDs(), b.Jobs(), b.Aliases(), b.Call(NewCallID())}, args: []any{job}, records: true}
	n, err := s.run(ctx, beanstalkdIssueScript, c).Uint64()
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
	b := s.beanstalkd()
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HDel(ctx, b.Jobs(), strconv.FormatUint(n, 10))
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
