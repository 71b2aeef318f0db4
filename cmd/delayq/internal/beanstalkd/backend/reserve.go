package backend

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/beanstalkd/proto"
	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/store"
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
// Without a wait it takes no job it does not keep: the reserves of every connection go
// together through reserveNow, which looks at the watched tubes' heads before it takes any.
// A wait on several tubes waits on each at once; should jobs come in two at the same moment,
// the best is kept and the others go back to their place (a release keeps a job's rank).
func (b *Backend) take(ctx context.Context, topics []string, wait time.Duration) (*delayq.Job, error) {
	if wait == 0 {
		// Short, and never cut: a job taken for a request that was gone would wait out its TTR.
		r, _ := b.reserver.Do(context.WithoutCancel(ctx), topics)
		return r.job, r.err
	}
	if len(topics) == 1 {
		return b.reserveOne(ctx, topics[0], wait)
	}
	jobs, err := b.reserveEach(ctx, topics, wait)
	if len(jobs) == 0 {
		return nil, err
	}
	best := jobs[0]
	for _, j := range jobs[1:] {
		if b.before(j, best) {
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

// reserveOne waits up to wait for a job of topic; nil when none came.
func (b *Backend) reserveOne(ctx context.Context, topic string, wait time.Duration) (*delayq.Job, error) {
	jobs, err := b.c.Reserve(ctx, topic, delayq.ReserveOptions{Wait: wait})
	if errors.Is(err, delayq.ErrNotFound) {
		// The topic does not exist yet: wait all the same.
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
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

// reserveNow serves concurrent reserves without a wait, each over the topics it watches, one
// flush at a time. Requests that watch one topic each take that topic's first jobs, in the
// order the requests came, with one library reserve a topic. When a request watches several,
// the topics' heads are looked at first (which moves due jobs to the ready sets, as a reserve
// would) and each request, in order, is given the best head among its topics; then each topic
// is reserved for as many jobs as it was given, so no job is taken that is not handed out.
// Another server, or a waiting reserve, may take a head meanwhile: a request can then get a
// later job of the same topic, or none (it then waits, or times out, like any reserve). The
// calls' contexts never end (see take), so no job is taken for a request that is gone.
func (b *Backend) reserveNow(ctx context.Context, reqs [][]string) []reserved {
	out := make([]reserved, len(reqs))
	given := make([]string, len(reqs)) // the topic each request takes from; "" for none
	several := false
	for i, topics := range reqs {
		given[i] = topics[0]
		several = several || len(topics) > 1
	}
	if several {
		var err error
		if given, err = b.assign(ctx, reqs); err != nil {
			for i := range out {
				out[i].err = err
			}
			return out
		}
	}
	byTopic := map[string][]int{}
	for i, t := range given {
		if t != "" {
			byTopic[t] = append(byTopic[t], i)
		}
	}
	for topic, idx := range byTopic {
		jobs, err := b.reserveUpTo(ctx, topic, len(idx))
		if errors.Is(err, delayq.ErrNotFound) {
			err = nil // no such topic yet: no job
		}
		for k, i := range idx {
			out[i].err = err
			if k < len(jobs) {
				out[i].job = jobs[k]
			}
		}
	}
	return out
}

// head is a ready job at the head of a topic, as a peek sees it.
type head struct {
	score float64
	id    string
}

// assign looks at the heads of every topic reqs watch and gives each request, in order, the
// topic of the best head left among those it watches ("" when none has one).
func (b *Backend) assign(ctx context.Context, reqs [][]string) ([]string, error) {
	registered, err := b.st.Topics(ctx)
	if err != nil {
		return nil, err
	}
	var parts []keys.Partition
	var of []string // the topic of each of parts
	seen := map[string]bool{}
	for _, topics := range reqs {
		for _, t := range topics {
			if seen[t] {
				continue
			}
			seen[t] = true
			for p := range registered[t] {
				parts = append(parts, b.st.Partition(t, p))
				of = append(of, t)
			}
		}
	}
	heads := map[string][]head{}
	for i, pk := range b.st.Peek(ctx, parts, store.LanePull, len(reqs), promoteBulk) {
		if pk.Err != nil {
			return nil, pk.Err
		}
		for k, score := range pk.Scores {
			heads[of[i]] = append(heads[of[i]], head{score, pk.IDs[k]})
		}
	}
	for _, hs := range heads {
		slices.SortFunc(hs, func(x, y head) int { return cmp.Or(cmp.Compare(x.score, y.score), cmp.Compare(x.id, y.id)) })
	}
	next := map[string]int{} // each topic's first head not yet given
	given := make([]string, len(reqs))
	for i, topics := range reqs {
		var best *head
		for _, t := range topics {
			if k := next[t]; k < len(heads[t]) {
				h := &heads[t][k]
				if best == nil || cmp.Or(cmp.Compare(h.score, best.score), cmp.Compare(h.id, best.id)) < 0 {
					best, given[i] = h, t
				}
			}
		}
		if best != nil {
			next[given[i]]++
		}
	}
	return given, nil
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

// reserveEach waits up to wait on every topic at once for one job each; the first job to come
// ends the others' waits. A topic's error counts only when no job came at all.
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
				cancel()
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
	if _, err := b.c.Release(ctx, j.Lease(), delayq.ReleaseOptions{}); err != nil {
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
	j, err := b.inside.ReserveJob(ctx, ref.Topic, ref.ID)
	if err != nil {
		return proto.Job{}, storeError(err)
	}
	b.hold(s, n, j)
	return b.protoJob(n, j), nil
}
