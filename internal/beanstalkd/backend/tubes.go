package backend

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/beanstalkd/proto"
)

// maxBuriedScan bounds how many buried jobs of a tube kick and peek-buried read to find the
// ones buried first (the dead set is kept in id order, not in order of burial).
const maxBuriedScan = 10000

// buriedFirst returns up to limit buried jobs of topic, those buried first first.
func (b *Backend) buriedFirst(ctx context.Context, topic string, limit int) ([]*delayq.Job, error) {
	var all []*delayq.Job
	cursor := ""
	for {
		page, next, err := b.c.DeadJobs(ctx, topic, 1000, cursor)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if next == "" || len(all) >= maxBuriedScan {
			break
		}
		cursor = next
	}
	slices.SortStableFunc(all, func(x, y *delayq.Job) int {
		return cmp.Or(x.DiedAt.Compare(y.DiedAt), cmp.Compare(x.ID, y.ID))
	})
	return all[:min(limit, len(all))], nil
}

// Kick implements proto.Backend: buried jobs first, those buried first first; if the tube has
// none, delayed jobs, those due first first.
func (b *Backend) Kick(ctx context.Context, tube string, bound uint64) (uint64, error) {
	topic := topicOf(tube)
	st, err := b.c.Stats(ctx, topic)
	if errors.Is(err, delayq.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	limit := int(min(bound, uint64(maxBuriedScan)))
	if limit == 0 {
		return 0, nil
	}
	if st.Dead > 0 {
		jobs, err := b.buriedFirst(ctx, topic, limit)
		if err != nil {
			return 0, err
		}
		ids := make([]string, len(jobs))
		for i, j := range jobs {
			ids[i] = j.ID
		}
		n, err := b.c.RequeueDead(ctx, topic, ids)
		return uint64(n), err
	}
	jobs, _, err := b.c.Jobs(ctx, topic, delayq.StateDelayed, min(limit, 1000), "")
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, j := range jobs {
		if _, err := b.c.Reschedule(ctx, topic, j.ID, 0); err == nil {
			n++
		} else if !errors.Is(err, delayq.ErrNotFound) && !errors.Is(err, delayq.ErrWrongState) {
			return n, err
		}
	}
	return n, nil
}

// KickJob implements proto.Backend.
func (b *Backend) KickJob(ctx context.Context, n uint64) error {
	ref, j, err := b.find(ctx, n)
	if err != nil {
		return err
	}
	switch j.State {
	case delayq.StateDead:
		k, err := b.c.RequeueDead(ctx, ref.Topic, []string{ref.ID})
		if err == nil && k == 0 {
			err = delayq.ErrNotFound
		}
		return storeError(err)
	case delayq.StateDelayed:
		_, err := b.c.Reschedule(ctx, ref.Topic, ref.ID, 0)
		return storeError(err)
	}
	return proto.ErrNotFound
}

// mostUrgent returns the ready job of topic that a reserve would take, or none. The ready list
// shows jobs that are due but not yet moved to the ready set ahead of the others, in due-time
// order, so the first entry is not necessarily the most urgent: up to maxBuriedScan entries
// are read and ranked as a reserve ranks them.
func (b *Backend) mostUrgent(ctx context.Context, topic string) ([]*delayq.Job, error) {
	var best *delayq.Job
	cursor := ""
	for read := 0; read < maxBuriedScan; {
		page, next, err := b.c.Jobs(ctx, topic, delayq.StateReady, 1000, cursor)
		if err != nil {
			return nil, err
		}
		for _, j := range page {
			if best == nil || before(j, best) {
				best = j
			}
		}
		read += len(page)
		if next == "" {
			break
		}
		cursor = next
	}
	if best == nil {
		return nil, nil
	}
	return []*delayq.Job{best}, nil
}

// PeekState implements proto.Backend.
func (b *Backend) PeekState(ctx context.Context, tube, state string) (proto.Job, error) {
	topic := topicOf(tube)
	var jobs []*delayq.Job
	var err error
	switch state {
	case "ready":
		jobs, err = b.mostUrgent(ctx, topic)
	case "delayed":
		jobs, _, err = b.c.Jobs(ctx, topic, delayq.StateDelayed, 1, "")
	case "buried":
		jobs, err = b.buriedFirst(ctx, topic, 1)
	}
	if err != nil {
		return proto.Job{}, storeError(err)
	}
	if len(jobs) == 0 {
		return proto.Job{}, proto.ErrNotFound
	}
	n, err := b.idOf(ctx, jobs[0])
	if err != nil {
		return proto.Job{}, storeError(err)
	}
	return b.protoJob(n, jobs[0]), nil
}

var stateNames = map[delayq.State]string{
	delayq.StateDelayed: "delayed", delayq.StateReady: "ready",
	delayq.StateReserved: "reserved", delayq.StateDead: "buried",
}

// priOf is a job's beanstalkd priority: its own, or for a job enqueued elsewhere its delayq
// priority mapped around the middle of beanstalkd's range (higher goes first in delayq, lower
// in beanstalkd).
func priOf(j *delayq.Job) uint32 {
	if j.BeanstalkdPriority != nil {
		return *j.BeanstalkdPriority
	}
	return uint32(int64(math.MaxUint32/2+1) - int64(j.Priority))
}

// StatsJob implements proto.Backend. beanstalkd's per-job counters of timeouts, releases,
// buries and kicks are not kept; reserves counts the job's deliveries (its attempts, the
// current one included).
func (b *Backend) StatsJob(ctx context.Context, n uint64) (proto.JobStats, error) {
	ref, j, err := b.find(ctx, n)
	if err != nil {
		return proto.JobStats{}, err
	}
	tube, err := b.tubeOf(ctx, ref.Topic)
	if err != nil {
		return proto.JobStats{}, err
	}
	now := time.Now()
	s := proto.JobStats{
		ID: n, Tube: tube, State: stateNames[j.State], Pri: priOf(j),
		Age: now.Sub(j.CreatedAt), Delay: max(j.RunAt.Sub(j.CreatedAt), 0), TTR: j.TTR,
		Reserves: uint64(j.Attempts),
	}
	switch j.State {
	case delayq.StateReserved:
		s.TimeLeft = max(time.Until(j.LeaseDeadline), 0)
	case delayq.StateDelayed:
		s.TimeLeft = max(time.Until(j.RunAt), 0)
	}
	return s, nil
}

// counts turns a topic's stats into beanstalkd's job counts.
func counts(st delayq.TopicStats) proto.JobCounts {
	return proto.JobCounts{
		Ready: uint64(st.Ready), Reserved: uint64(st.Reserved),
		Delayed: uint64(st.Delayed), Buried: uint64(st.Dead),
	}
}

func total(c proto.JobCounts) uint64 { return c.Ready + c.Reserved + c.Delayed + c.Buried }

// StatsTube implements proto.Backend.
func (b *Backend) StatsTube(ctx context.Context, tube string) (proto.TubeStats, error) {
	topic := topicOf(tube)
	st, err := b.c.Stats(ctx, topic)
	if err != nil {
		return proto.TubeStats{}, storeError(err)
	}
	s := proto.TubeStats{Jobs: counts(*st)}
	s.TotalJobs = total(s.Jobs)
	b.mu.Lock()
	p, paused := b.pauses[topic]
	b.mu.Unlock()
	if paused {
		s.Pause, s.PauseTimeLeft = p.length, max(time.Until(p.until), 0)
	}
	if s.TotalJobs == 0 && !paused {
		return s, proto.ErrNotFound
	}
	return s, nil
}

// Stats implements proto.Backend.
func (b *Backend) Stats(ctx context.Context) (proto.StoreStats, error) {
	topics, err := b.c.Topics(ctx)
	if err != nil {
		return proto.StoreStats{}, storeError(err)
	}
	var s proto.StoreStats
	for _, t := range topics {
		c := counts(t)
		s.Jobs.Ready += c.Ready
		s.Jobs.Reserved += c.Reserved
		s.Jobs.Delayed += c.Delayed
		s.Jobs.Buried += c.Buried
	}
	s.TotalJobs = total(s.Jobs)
	return s, nil
}

// ListTubes implements proto.Backend: the tubes that hold jobs or are paused.
func (b *Backend) ListTubes(ctx context.Context) ([]string, error) {
	topics, err := b.c.Topics(ctx)
	if err != nil {
		return nil, storeError(err)
	}
	var out []string
	for _, t := range topics {
		b.mu.Lock()
		_, paused := b.pauses[t.Name]
		b.mu.Unlock()
		if total(counts(t)) == 0 && !paused {
			continue
		}
		name, err := b.tubeOf(ctx, t.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, nil
}

// PauseTube implements proto.Backend: the topic is paused, and resumed when delay has passed
// (by this process: a restart before then leaves the topic paused until resumed).
func (b *Backend) PauseTube(ctx context.Context, tube string, delay time.Duration) error {
	topic := topicOf(tube)
	if err := b.c.PauseTopic(ctx, topic); err != nil {
		return storeError(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.pauses[topic]; ok {
		p.timer.Stop()
	}
	var timer *time.Timer
	timer = time.AfterFunc(delay, func() {
		b.mu.Lock()
		if b.pauses[topic].timer == timer {
			delete(b.pauses, topic)
		}
		b.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.c.ResumeTopic(ctx, topic); err != nil {
			b.log.Warn("beanstalkd: resuming a paused tube", "tube", tube, "err", err)
		}
	})
	b.pauses[topic] = pause{length: delay, until: time.Now().Add(delay), timer: timer}
	return nil
}
