package backend

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/beanstalkd/proto"
	"github.com/delayq/delayq/internal/clienthooks"
)

// waitStep bounds one long poll of the library's Reserve (its Limits.MaxWait is 60 s by
// default); a longer beanstalkd reserve polls again.
const waitStep = 30 * time.Second

// Reserve implements proto.Backend. It waits on every watched tube at once and takes the most
// urgent job among them.
func (b *Backend) Reserve(ctx context.Context, s proto.Session, tubes []string, timeout time.Duration) (proto.Job, error) {
	topics := make([]string, len(tubes))
	for i, t := range tubes {
		topics[i] = topicOf(t)
	}
	var deadline time.Time
	if timeout >= 0 {
		deadline = time.Now().Add(timeout)
	}
	// A job ready now is taken whatever becomes of ctx: the server cancels it when the client
	// closes its sending side, which ends a wait, not a reserve that needs none.
	for first := true; ; first = false {
		wait, tctx := waitStep, ctx
		if timeout >= 0 {
			wait = max(min(wait, time.Until(deadline)), 0)
		}
		if first {
			wait, tctx = 0, context.WithoutCancel(ctx)
		}
		j, err := b.take(tctx, topics, wait)
		if err != nil {
			return proto.Job{}, storeError(err)
		}
		if j != nil {
			n, err := b.idOf(ctx, j)
			if err != nil {
				b.giveBack(j)
				return proto.Job{}, storeError(err)
			}
			b.hold(s, n, j)
			return b.protoJob(n, j), nil
		}
		if timeout >= 0 && !time.Now().Before(deadline) {
			return proto.Job{}, proto.ErrTimedOut
		}
		if err := ctx.Err(); err != nil {
			return proto.Job{}, err
		}
	}
}

// take reserves the most urgent job of topics, waiting up to wait for one; nil when none came.
func (b *Backend) take(ctx context.Context, topics []string, wait time.Duration) (*delayq.Job, error) {
	if len(topics) == 1 {
		return b.reserveOne(ctx, topics[0], wait)
	}
	// Each tube's most urgent job, without waiting; the best is kept and the others go back to
	// their place (a release keeps a job's rank). Only when no tube has one, wait on all.
	jobs, err := b.reserveEach(ctx, topics, 0)
	if len(jobs) == 0 && err == nil && wait > 0 {
		jobs, err = b.reserveEach(ctx, topics, wait)
	}
	if len(jobs) == 0 {
		return nil, err
	}
	best := jobs[0]
	for _, j := range jobs[1:] {
		if before(j, best) {
			best = j
		}
	}
	for _, j := range jobs {
		if j != best {
			b.giveBack(j)
		}
	}
	return best, nil
}

func (b *Backend) reserveOne(ctx context.Context, topic string, wait time.Duration) (*delayq.Job, error) {
	if wait == 0 {
		// Short, and never cut: a job taken for a request that was gone would wait out its TTR.
		r, _ := b.reserver.Do(context.WithoutCancel(ctx), topic)
		return r.job, r.err
	}
	jobs, err := b.c.Reserve(ctx, topic, delayq.ReserveOptions{Wait: wait})
	if errors.Is(err, delayq.ErrNotFound) {
		if wait > 0 {
			// The topic does not exist yet; the library waits for it only when told to.
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return nil, nil
	}
	if err != nil || len(jobs) == 0 {
		return nil, err
	}
	return jobs[0], nil
}

// reserved is a job a reserve without a wait took, or none, or why it failed.
type reserved struct {
	job *delayq.Job
	err error
}

// maxReserveBatch bounds the reserves without a wait that one call serves.
const maxReserveBatch = 100

// reserveNow serves concurrent reserves without a wait with one call a topic: each takes as
// many jobs as the topic has requests, handed out in the order the requests came. The calls'
// contexts never end (see reserveOne), so no job is taken for a request that is gone.
func (b *Backend) reserveNow(ctx context.Context, topics []string) []reserved {
	out := make([]reserved, len(topics))
	byTopic := map[string][]int{}
	for i, t := range topics {
		byTopic[t] = append(byTopic[t], i)
	}
	for topic, reqs := range byTopic {
		jobs, err := b.reserveUpTo(ctx, topic, len(reqs))
		if errors.Is(err, delayq.ErrNotFound) {
			err = nil // no such topic yet: no job
		}
		for k, i := range reqs {
			out[i].err = err
			if k < len(jobs) {
				out[i].job = jobs[k]
			}
		}
	}
	return out
}

// reserveUpTo reserves up to n jobs of topic without a wait: in one call, or one at a time
// when n is over the Client's Limits.MaxReserve.
func (b *Backend) reserveUpTo(ctx context.Context, topic string, n int) ([]*delayq.Job, error) {
	jobs, err := b.c.Reserve(ctx, topic, delayq.ReserveOptions{Max: n})
	var invalid *delayq.InvalidError
	if n == 1 || !errors.As(err, &invalid) || invalid.Field != "max" {
		return jobs, err
	}
	jobs = nil
	for range n {
		one, err := b.c.Reserve(ctx, topic, delayq.ReserveOptions{Max: 1})
		if err != nil && len(jobs) == 0 {
			return nil, err
		}
		if err != nil || len(one) == 0 {
			break
		}
		jobs = append(jobs, one...)
	}
	return jobs, nil
}

// reserveEach reserves at most one job from each topic at once; with a wait, the first job to
// come ends the others' waits (without one, every topic is asked to the end). A topic's error counts only when no job came at all.
func (b *Backend) reserveEach(ctx context.Context, topics []string, wait time.Duration) ([]*delayq.Job, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu   sync.Mutex
		jobs []*delayq.Job
		errs []error
		wg   sync.WaitGroup
	)
	for _, t := range topics {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j, err := b.reserveOne(ctx, t, wait)
			mu.Lock()
			defer mu.Unlock()
			if j != nil {
				jobs = append(jobs, j)
				if wait > 0 {
					cancel()
				}
			} else if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	if len(jobs) > 0 {
		return jobs, nil
	}
	return nil, errors.Join(errs...)
}

// giveBack releases a job reserved but not handed out; it keeps its rank.
func (b *Backend) giveBack(j *delayq.Job) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.c.Release(ctx, j.Lease()); err != nil {
		b.log.Warn("beanstalkd: giving a job back: it comes back after its TTR", "topic", j.Topic, "id", j.ID, "err", err)
	}
}

// ReserveJob implements proto.Backend: the job is reserved in any state but reserved, whatever
// its tube's pause, as beanstalkd does.
func (b *Backend) ReserveJob(ctx context.Context, s proto.Session, n uint64) (proto.Job, error) {
	ref, err := b.st.BeanstalkdLookup(ctx, n)
	if err != nil {
		return proto.Job{}, storeError(err)
	}
	v, err := clienthooks.ReserveJob(ctx, b.c, ref.Topic, ref.ID)
	if err != nil {
		return proto.Job{}, storeError(err)
	}
	j := v.(*delayq.Job)
	b.hold(s, n, j)
	return b.protoJob(n, j), nil
}
