package backend

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/beanstalkd/proto"
	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/store"
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
	// Within a millisecond, the order of burial the front end noted; jobs buried otherwise
	// (out of retries, by another client) have none and go by id.
	fields := make([]string, len(all))
	for i, j := range all {
		fields[i] = "-"
		if n, ok := nativeID(j); ok {
			fields[i] = store.BeanstalkdJobCounter(n, "burial")
		}
	}
	order := map[*delayq.Job]uint64{}
	if len(fields) > 0 {
		seq, err := b.st.BeanstalkdCounters(ctx, fields...)
		if err != nil {
			return nil, err
		}
		for i, j := range all {
			order[j] = seq[i]
		}
	}
	slices.SortStableFunc(all, func(x, y *delayq.Job) int {
		return cmp.Or(x.DiedAt.Compare(y.DiedAt), cmp.Compare(order[x], order[y]), cmp.Compare(x.ID, y.ID))
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
		return b.kickBuried(ctx, topic, limit)
	}
	return b.kickDelayed(ctx, topic, st.Partitions, limit)
}

// kickBuried requeues up to limit buried jobs of topic, those buried first first, and moves
// every job now due into the ready set: however many come back at once, the next reserve
// takes the most urgent of them.
func (b *Backend) kickBuried(ctx context.Context, topic string, limit int) (uint64, error) {
	jobs, err := b.buriedFirst(ctx, topic, limit)
	if err != nil {
		return 0, err
	}
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	n, err := b.c.RequeueDead(ctx, topic, ids)
	if err != nil {
		return 0, err
	}
	for range n/promoteBulk + 1 {
		if err := b.promote(ctx, topic); err != nil {
			return uint64(n), err
		}
	}
	b.kicked(ctx, jobs)
	return uint64(n), nil
}

// kickDelayed makes up to limit delayed jobs of topic ready at once, those due first first,
// a page at a time: a job kicked leaves the delayed set, so each page starts from its head
// again. A page that moves none (each job gone or due meanwhile) ends the kick.
func (b *Backend) kickDelayed(ctx context.Context, topic string, partitions, limit int) (uint64, error) {
	var n uint64
	for n < uint64(limit) {
		jobs, _, err := b.c.Jobs(ctx, topic, delayq.StateDelayed, min(limit-int(n), 1000), "")
		if err != nil || len(jobs) == 0 {
			return n, err
		}
		byPartition := map[int][]string{}
		for _, j := range jobs {
			p := keys.PartitionOf(j.ID, partitions)
			byPartition[p] = append(byPartition[p], j.ID)
		}
		moved := map[string]bool{}
		for p, ids := range byPartition {
			done, err := b.st.KickDelayed(ctx, b.st.Partition(topic, p), ids)
			if err != nil {
				return n, err
			}
			for _, id := range done {
				moved[id] = true
			}
		}
		var kicked []*delayq.Job
		for _, j := range jobs {
			if moved[j.ID] {
				kicked = append(kicked, j)
			}
		}
		b.kicked(ctx, kicked)
		n += uint64(len(kicked))
		if len(kicked) == 0 {
			break
		}
	}
	return n, nil
}

// kicked counts a kick of each of jobs, as they were before the kick; a buried job's failed
// attempts are kept, as the requeue starts them afresh.
func (b *Backend) kicked(ctx context.Context, jobs []*delayq.Job) {
	var counters []string
	for _, j := range jobs {
		n, err := b.idOf(ctx, j)
		if err != nil {
			continue
		}
		counters = append(counters, store.BeanstalkdJobCounter(n, "kicks"))
		if j.State == delayq.StateDead && j.Attempts > 0 {
			b.count(ctx, store.BeanstalkdJobCounter(n, "attempts"), int64(j.Attempts))
		}
	}
	if err := b.st.CountBeanstalkdEach(ctx, counters); err != nil {
		b.log.Warn("beanstalkd: counting kicks", "err", err)
	}
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
		if err != nil {
			return storeError(err)
		}
		b.kicked(ctx, []*delayq.Job{j})
		return nil
	case delayq.StateDelayed:
		partitions, err := b.st.TopicPartitions(ctx, ref.Topic)
		if err != nil {
			return storeError(err)
		}
		moved, err := b.st.KickDelayed(ctx, b.st.Partition(ref.Topic, keys.PartitionOf(ref.ID, partitions)), []string{ref.ID})
		if err != nil {
			return err
		}
		if len(moved) == 0 {
			return proto.ErrNotFound
		}
		b.kicked(ctx, []*delayq.Job{j})
		return nil
	}
	return proto.ErrNotFound
}

// promote moves the topic's due jobs to its ready set, as a reserve does first, so that the
// ready set's head is the job a reserve would take and its counts are up to date. It also
// fails the leases whose TTR has passed.
func (b *Backend) promote(ctx context.Context, topic string) error {
	n, err := b.st.TopicPartitions(ctx, topic)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	parts := make([]keys.Partition, n)
	for i := range parts {
		parts[i] = b.st.Partition(topic, i)
	}
	for _, p := range b.st.Peek(ctx, parts, store.LanePull, 1, promoteBulk) {
		if p.Err != nil {
			return p.Err
		}
	}
	return nil
}

// promoteBulk bounds the jobs promote moves in a partition, as delayq's Config.BulkLimit does
// a reserve's.
const promoteBulk = 1000

// PeekState implements proto.Backend.
func (b *Backend) PeekState(ctx context.Context, tube, state string) (proto.Job, error) {
	topic := topicOf(tube)
	var jobs []*delayq.Job
	var err error
	switch state {
	case "ready":
		if err = b.promote(ctx, topic); err == nil {
			jobs, _, err = b.c.Jobs(ctx, topic, delayq.StateReady, 1, "")
		}
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

// StatsJob implements proto.Backend. A job's releases, buries and kicks are counted by the
// front end; its timeouts are its failed attempts (those before kicks from the buried kept
// aside) less its buries, and its reserves those attempts, its releases, the reserves that
// ended with their connection, and the reserve it is in.
func (b *Backend) StatsJob(ctx context.Context, n uint64) (proto.JobStats, error) {
	ref, j, err := b.find(ctx, n)
	if err != nil {
		return proto.JobStats{}, err
	}
	tube, err := b.tubeOf(ctx, ref.Topic)
	if err != nil {
		return proto.JobStats{}, err
	}
	c, err := b.st.BeanstalkdCounters(ctx, store.BeanstalkdJobCounter(n, "releases"),
		store.BeanstalkdJobCounter(n, "buries"), store.BeanstalkdJobCounter(n, "kicks"),
		store.BeanstalkdJobCounter(n, "delay"), store.BeanstalkdJobCounter(n, "attempts"),
		store.BeanstalkdJobCounter(n, "returns"))
	if err != nil {
		return proto.JobStats{}, err
	}
	attempts := uint64(j.Attempts) + c[4] // finished ones, and the current one of a reserved job
	if j.State == delayq.StateReserved {
		attempts--
	}
	s := proto.JobStats{
		ID: n, Tube: tube, State: stateNames[j.State], Pri: priOf(j),
		Age: time.Since(j.CreatedAt), Delay: time.Duration(c[3]) * time.Second, TTR: j.TTR,
		Reserves: attempts + c[0] + c[5], Timeouts: attempts - min(c[1], attempts),
		Releases: c[0], Buries: c[1], Kicks: c[2],
	}
	switch j.State {
	case delayq.StateReserved:
		s.Reserves++
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
	if err := b.promote(ctx, topic); err != nil {
		return proto.TubeStats{}, err
	}
	st, err := b.c.Stats(ctx, topic)
	if err != nil {
		return proto.TubeStats{}, storeError(err)
	}
	s := proto.TubeStats{Jobs: counts(*st)}
	if s.Jobs.Urgent, err = b.st.UrgentReady(ctx, topic, st.Partitions); err != nil {
		return s, err
	}
	c, err := b.st.BeanstalkdCounters(ctx, store.BeanstalkdTubeCounter(topic, "put"),
		store.BeanstalkdTubeCounter(topic, "delete"), store.BeanstalkdTubeCounter(topic, "pause"))
	if err != nil {
		return s, err
	}
	s.TotalJobs, s.CmdDelete, s.CmdPauseTube = c[0], c[1], c[2]
	pauses, err := b.st.BeanstalkdPauses(ctx)
	if err != nil {
		return s, err
	}
	p, paused := pauses[topic]
	if paused {
		s.Pause = time.Duration(p.Length) * time.Second
		s.PauseTimeLeft = max(time.Until(time.UnixMilli(p.UntilMs)), 0)
	}
	if total(s.Jobs) == 0 && !paused {
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
		if c.Ready > 0 {
			// Due jobs not yet in the ready set are counted ready but not urgent: move them
			// there first, as stats-tube does.
			if err := b.promote(ctx, t.Name); err != nil {
				return s, err
			}
			if c.Urgent, err = b.st.UrgentReady(ctx, t.Name, t.Partitions); err != nil {
				return s, err
			}
		}
		s.Jobs.Urgent += c.Urgent
		s.Jobs.Ready += c.Ready
		s.Jobs.Reserved += c.Reserved
		s.Jobs.Delayed += c.Delayed
		s.Jobs.Buried += c.Buried
		s.JobTimeouts += uint64(t.LeasesExpired)
	}
	put, err := b.st.BeanstalkdCounters(ctx, store.BeanstalkdPutCounter)
	if err != nil {
		return s, err
	}
	s.TotalJobs = put[0]
	return s, nil
}

// ListTubes implements proto.Backend: the tubes that hold jobs or are paused.
func (b *Backend) ListTubes(ctx context.Context) ([]string, error) {
	topics, err := b.c.Topics(ctx)
	if err != nil {
		return nil, storeError(err)
	}
	pauses, err := b.st.BeanstalkdPauses(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range topics {
		if _, paused := pauses[t.Name]; total(counts(t)) == 0 && !paused {
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

// PauseTube implements proto.Backend: the topic is paused, and the pause kept in Redis, so that
// every server reports it and resumes the topic when it ends, after a restart too.
func (b *Backend) PauseTube(ctx context.Context, tube string, delay time.Duration) error {
	topic := topicOf(tube)
	if err := b.c.PauseTopic(ctx, topic); err != nil {
		return storeError(err)
	}
	b.count(ctx, store.BeanstalkdTubeCounter(topic, "pause"), 1)
	p := store.BeanstalkdPause{UntilMs: time.Now().Add(delay).UnixMilli(), Length: int64(delay / time.Second)}
	if err := b.st.SetBeanstalkdPause(ctx, topic, p); err != nil {
		return err
	}
	b.resumeAt(topic, p.UntilMs)
	if delay <= 0 {
		// Over at once: the next reserve takes the tube's jobs, as beanstalkd's does, whoever
		// forgets the pause first (the timer just set may).
		if err := b.c.ResumeTopic(ctx, topic); err != nil {
			return storeError(err)
		}
		_, err := b.st.EndBeanstalkdPause(ctx, topic, p.UntilMs)
		return storeError(err)
	}
	return nil
}

// endPause resumes topic, unless a later pause has replaced the one that ends at untilMs.
func (b *Backend) endPause(ctx context.Context, topic string, untilMs int64) error {
	ended, err := b.st.EndBeanstalkdPause(ctx, topic, untilMs)
	if err == nil && ended {
		err = b.c.ResumeTopic(ctx, topic)
	}
	return err
}

// resumeAt resumes topic at untilMs, unless a later pause has replaced this one by then.
func (b *Backend) resumeAt(topic string, untilMs int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	if pt, ok := b.timers[topic]; ok {
		if pt.untilMs == untilMs {
			return
		}
		pt.t.Stop()
	}
	b.timers[topic] = pauseTimer{untilMs: untilMs, t: time.AfterFunc(time.Until(time.UnixMilli(untilMs)), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.endPause(ctx, topic, untilMs); err != nil {
			b.log.Warn("beanstalkd: resuming a paused tube", "topic", topic, "err", err)
		}
		// Forgotten, so that the next reading of the pauses tries again after a failure.
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.timers[topic].untilMs == untilMs {
			delete(b.timers, topic)
		}
	})}
}

// pauseRecheck is how often a started Backend reads the pauses kept in Redis, to resume the
// tubes other servers paused (which may stop before the pause ends).
const pauseRecheck = time.Second

// Start resumes, when they end, the pauses kept in Redis: those a server made before it
// stopped, or another server made, now and later on, until Close.
func (b *Backend) Start(ctx context.Context) error {
	if err := b.loadPauses(ctx); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.watching && !b.closed {
		b.watching = true
		go b.watchPauses()
	}
	return nil
}

// loadPauses sets a resume for each pause kept in Redis.
func (b *Backend) loadPauses(ctx context.Context) error {
	pauses, err := b.st.BeanstalkdPauses(ctx)
	if err != nil {
		return err
	}
	for topic, p := range pauses {
		b.resumeAt(topic, p.UntilMs)
	}
	return nil
}

// watchPauses reads the pauses kept in Redis every pauseRecheck until Close.
func (b *Backend) watchPauses() {
	t := time.NewTicker(pauseRecheck)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := b.loadPauses(ctx); err != nil {
			b.log.Warn("beanstalkd: reading the tubes' pauses", "err", err)
		}
		cancel()
	}
}

// Close stops the Backend's timers; the pauses they were to end stay kept in Redis.
func (b *Backend) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	close(b.stop)
	for _, pt := range b.timers {
		pt.t.Stop()
	}
}
