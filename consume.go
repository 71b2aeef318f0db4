package delayq

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/store"
	"github.com/delayq/delayq/internal/tracing"
	"github.com/delayq/delayq/internal/wake"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// ReserveOptions shape a Reserve call. Zero fields take the defaults.
type ReserveOptions struct {
	// Max is the most jobs to lease. Defaults to 1.
	Max int
	// MaxBytes bounds the total size of the jobs' stored records (about their bodies' size):
	// a reserve stops leasing once the next job would pass it, but always takes at least one.
	// Defaults to DefaultReserveBytes.
	MaxBytes int64
	// Wait is how long to wait for a job to become due when none is (a long poll). Defaults to 0.
	Wait time.Duration
	// TTR overrides each job's lease length.
	TTR time.Duration
	// push reserves jobs that carry a CallbackURL instead of the others (tests only: push jobs
	// are for a push Worker).
	push bool
}

func (o ReserveOptions) withDefaults() ReserveOptions {
	if o.Max == 0 {
		o.Max = 1
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultReserveBytes
	}
	return o
}

// Validate reports whether a Client with limits l would take o, as an *InvalidError naming the
// first wrong field.
func (o ReserveOptions) Validate(l Limits) error {
	l = l.WithDefaults()
	o = o.withDefaults()
	switch {
	case o.Max < 1 || o.Max > l.MaxReserve:
		return invalid("max", "%d is outside 1 to %d", o.Max, l.MaxReserve)
	case o.MaxBytes < 1 || o.MaxBytes > l.MaxReserveBytes:
		return invalid("max_bytes", "%d is outside 1 to %d", o.MaxBytes, l.MaxReserveBytes)
	case o.Wait < 0 || o.Wait > l.MaxWait:
		return invalid("wait", "%s is outside 0 to %s", ms(o.Wait), ms(l.MaxWait))
	case o.TTR != 0 && (o.TTR < l.MinTTR || o.TTR > l.MaxTTR):
		return invalid("ttr", "%s is outside %s to %s", ms(o.TTR), ms(l.MinTTR), ms(l.MaxTTR))
	}
	return nil
}

// DefaultReserveBytes is the default ReserveOptions.MaxBytes.
const DefaultReserveBytes = 16 << 20

// Reserve leases up to Max due jobs of topic, highest priority first, then earliest due time,
// waiting up to Wait for one to become due. On a topic of one partition the order is exact. Over
// several partitions Reserve first reads every partition's head in one round trip and then
// leases from those holding the best jobs: the order is exact as the heads stood at that look,
// and approximate only in that a job that becomes due, or that another consumer takes, between
// the look and the lease is not accounted for (the call may then return fewer jobs, or the next
// ones of the partitions it chose). Each job comes with a Lease to pass to Ack, Nack,
// Touch or Release, and counts one more attempt. It returns no jobs and no error when none came
// due in time. When ctx ends while jobs are being leased, they are put back at once, their
// attempt not counted, and Reserve returns ctx's error: a job is never leased to nobody.
//
// A topic that does not exist (nothing was ever enqueued to it, or it was deleted) is no error:
// Reserve waits on it as on an empty topic, without creating it, and returns the first job
// enqueued to it meanwhile, so that consumers may start before their producers. TopicExists
// tells such a topic, a misspelt name say, from an empty one.
func (c *Client) Reserve(ctx context.Context, topic string, o ReserveOptions) ([]*Job, error) {
	if err := o.Validate(c.cfg.Limits); err != nil {
		return nil, err
	}
	if err := ValidateTopic(topic); err != nil {
		return nil, err
	}
	ctx, span := c.trace.Start(ctx, tracing.Receive, topic)
	jobs, err := c.reserve(ctx, topic, o)
	tracing.Set(span, semconv.MessagingBatchMessageCount(len(jobs)))
	tracing.End(span, err)
	return jobs, err
}

func (c *Client) reserve(ctx context.Context, topic string, o ReserveOptions) ([]*Job, error) {
	o = o.withDefaults()
	t, lane, done, err := c.consumerState(ctx, topic, o.push)
	if err != nil {
		return nil, err
	}
	defer done()
	deadline := time.Now().Add(o.Wait)
	// A poll (no wait) asks every partition: a notice of a job enqueued just before this call
	// may not have arrived yet, and a caller who polls must see every job due by now. A long
	// poll trusts what the process knows: that notice wakes it when it comes.
	everyPartition := o.Wait == 0
	for {
		if err := c.learnTopic(ctx, t); err != nil {
			return nil, err
		}
		r, err := c.reserveDue(ctx, t, lane, reserveAsk{max: o.Max, maxBytes: o.MaxBytes, ttr: o.TTR, all: everyPartition})
		everyPartition = false
		if ctx.Err() != nil {
			c.abandon(ctx, r.calls)
			return nil, ctx.Err()
		}
		if err != nil || len(r.jobs) > 0 || !time.Now().Before(deadline) {
			return r.jobs, err
		}
		c.waitDue(ctx, t, deadline)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// consumerState returns the wake-up state of a topic's pull or push lane. It writes nothing:
// a topic that does not exist yet is looked for in the registry, and comes into being with its
// first job.
func (c *Client) consumerState(ctx context.Context, topic string, push bool) (*wake.Topic, store.Lane, func(), error) {
	t, lane, done, err := c.consumerTopic(topic, push)
	if err != nil {
		return nil, "", nil, err
	}
	if t.PartitionCount() == 0 {
		t.LookUp(time.Now(), 0)
		if err := c.findTopic(ctx, t); err != nil {
			done()
			return nil, "", nil, err
		}
	}
	return t, lane, done, nil
}

// consumerTopic returns the wake-up state of a topic's pull or push lane without asking Redis
// anything (learnTopic finds the topic later), and the function to call when done with it.
func (c *Client) consumerTopic(topic string, push bool) (*wake.Topic, store.Lane, func(), error) {
	if err := ValidateTopic(topic); err != nil {
		return nil, "", nil, err
	}
	lane := store.LanePull
	if push {
		lane = store.LanePush
	}
	if c.isClosed() {
		return nil, "", nil, ErrClosed
	}
	t, done := c.useTopic(string(lane)+"/"+topic, topic)
	t.SetLane(lane)
	return t, lane, done, nil
}

// learnTopic looks for t's topic in the registry when it was not there the last time and
// nobody looked within the recheck interval.
func (c *Client) learnTopic(ctx context.Context, t *wake.Topic) error {
	if !t.LookUp(time.Now(), c.recheckInterval()) {
		return nil
	}
	return c.findTopic(ctx, t)
}

// findTopic asks the registry for t's topic; once it exists, t learns its partitions and
// listens for their notices. Until then it listens for new topics.
func (c *Client) findTopic(ctx context.Context, t *wake.Topic) error {
	n, err := c.partitions(ctx, t.Name, false)
	switch {
	case err == nil:
		t.SetPartitionCount(n)
		c.listen(t, n)
		return nil
	case errors.Is(err, ErrNotFound):
		c.listenForTopics(t)
		return nil
	default:
		return err
	}
}

// listen makes notices of t's n partitions wake t, unless the Client polls instead, and makes
// the Client expire their leases at their deadlines.
func (c *Client) listen(t *wake.Topic, n int) {
	c.keepLeases(t.Name, n)
	if c.cfg.PollInterval > 0 {
		return
	}
	channels := make([]string, n)
	for p := range n {
		channels[p] = c.store.Partition(t.Name, p).Notify()
	}
	c.hub.Listen(t, channels)
}

// listenForTopics makes the registration of t's topic wake t, unless the Client polls instead.
func (c *Client) listenForTopics(t *wake.Topic) {
	if c.cfg.PollInterval > 0 {
		return
	}
	c.hub.Await(t)
}

func (c *Client) recheckInterval() time.Duration {
	if c.cfg.PollInterval > 0 {
		return c.cfg.PollInterval
	}
	return c.cfg.RecheckInterval
}

// waitDue sleeps until something may be due in t, deadline passes or ctx ends. When a recheck
// falls due, it takes the rechecks nobody in the process has made within the interval and
// makes them, for every waiter of t.
func (c *Client) waitDue(ctx context.Context, t *wake.Topic, deadline time.Time) {
	interval := c.recheckInterval()
	if !t.Wait(ctx, deadline, interval) {
		return
	}
	if t.PartitionCount() == 0 {
		return // the caller looks the topic up
	}
	parts, seen := t.ClaimRechecks(time.Now(), interval)
	if len(parts) == 0 {
		return
	}
	ps := make([]keys.Partition, len(parts))
	for i, p := range parts {
		ps[i] = c.store.Partition(t.Name, p)
	}
	at := time.Now()
	heads, err := c.store.Heads(ctx, ps, t.Lane())
	if err != nil {
		t.Recheck(parts) // the next reserve asks them, and meets the error
		return
	}
	nowMs := t.ServerNowMs(at)
	for i, p := range parts {
		next := heads[i].DueMs
		if heads[i].Ready {
			next = nowMs
		}
		t.Learn(p, seen[i], at, nowMs, next, heads[i].Paused)
	}
}

// reserveAsk is what one reserveDue asks for.
type reserveAsk struct {
	max      int
	maxBytes int64
	ttr      time.Duration
	all      bool     // ask every partition, not just those that may have something due
	acks     []ackReq // acks to send along
}

// reservation is what one reserveDue got: the jobs, an outcome per ack (nil, ErrLeaseLost, or
// an error that leaves it undone or unknown), and the calls that leased the jobs, to abandon
// them when nobody will read the jobs.
type reservation struct {
	jobs  []*Job
	acked []error
	calls []partitionCall
}

type partitionCall struct {
	part keys.Partition
	call store.ReserveCall
}

// reserveDue asks each partition that may have something due (every one when a.all is set),
// until a.max jobs are leased. Over several partitions it first looks at their heads and asks
// only those holding the best a.max jobs of all, best first, so that the jobs come in priority,
// then due-time order across partitions as they stood at the look. It acks a.acks: when it
// asks one partition, that partition's acks ride with its reserve call; all others leave at
// once in a round trip of their own, beside the look and the calls, so that a partition that
// does not answer (a Cluster shard down) holds no ack of another.
//
// A call whose answer is lost is sent again unchanged, which answers with the jobs the first
// run leased; when that fails too, or ctx ends, the call is abandoned: what it leased is put
// back, and its acks count as not sent.
func (c *Client) reserveDue(ctx context.Context, t *wake.Topic, lane store.Lane, a reserveAsk) (reservation, error) {
	parts, seen := t.Due(time.Now(), a.all)
	riders := newRidingAcks(a.acks)
	var ride *keys.Partition
	if len(parts) == 1 {
		p := c.store.Partition(t.Name, parts[0])
		ride = &p
	}
	early := make(chan struct{})
	if others := riders.takeAllBut(ride); len(others.reqs) > 0 {
		go func() {
			defer close(early)
			riders.settleTaken(others, c.flushAcks(ctx, others.reqs))
		}()
	} else {
		close(early)
	}
	var take []int // how many to take from each of parts; nil: as many as are still wanted
	var failed error
	if len(parts) > 1 {
		parts, seen, take, failed = c.bestPartitions(ctx, t, lane, parts, seen, a.max)
	}
	var r reservation
	budget := a.maxBytes
	for i, p := range parts {
		part := c.store.Partition(t.Name, p)
		max := a.max - len(r.jobs)
		if take != nil {
			max = min(max, take[i])
		}
		rc := store.ReserveCall{
			Call: store.NewCallID(), Secret: newLeasePrefix(), Lane: lane,
			Max: max, MaxBytes: budget, Bulk: c.cfg.BulkLimit,
			TTRMs: a.ttr.Milliseconds(), Acks: riders.take(part),
		}
		res, err := c.reserveOnce(ctx, part, rc)
		if len(rc.Acks) > 0 {
			riders.settle(part, res.Acked)
		}
		if err != nil {
			// The jobs leased so far stand; the other partitions wait for the next call.
			t.Recheck([]int{p})
			failed = err
			break
		}
		t.Learn(p, seen[i], time.Now(), res.NowMs, res.NextMs, res.Paused)
		if len(res.Jobs) > 0 {
			r.calls = append(r.calls, partitionCall{part, rc})
		}
		for _, rec := range res.Jobs {
			j := jobFromRecord(t.Name, rec)
			ttr := rc.TTRMs
			if ttr == 0 {
				ttr = rec.TTRMs
			}
			j.LeasedAt = time.UnixMilli(rec.LeaseDeadlineMs - ttr).UTC()
			r.jobs = append(r.jobs, j)
			budget -= int64(len(rec.Body))
		}
		if len(r.jobs) >= a.max || budget <= 0 {
			break
		}
	}
	if take != nil {
		sortByPriority(r.jobs)
	}
	if rest := riders.takeAllBut(nil); len(rest.reqs) > 0 {
		riders.settleTaken(rest, c.flushAcks(ctx, rest.reqs))
	}
	<-early
	r.acked = riders.errs
	if len(r.jobs) > 0 {
		return r, nil
	}
	return r, failed
}

// bestPartitions looks at the heads of parts (one round trip) and returns those holding the
// best max jobs of them all, best first, with their notice counts and how many jobs to take
// from each. What it saw of the others it records in t; a partition it could not look at is
// rechecked later, and err is the last such failure.
func (c *Client) bestPartitions(ctx context.Context, t *wake.Topic, lane store.Lane, parts []int, seen []uint64, max int) (best []int, bestSeen []uint64, take []int, err error) {
	ps := make([]keys.Partition, len(parts))
	for i, p := range parts {
		ps[i] = c.store.Partition(t.Name, p)
	}
	at := time.Now()
	peeked := c.store.Peek(ctx, ps, lane, max, c.cfg.BulkLimit)
	type head struct {
		score float64
		id    string
		i     int // into parts
	}
	var heads []head
	for i, pk := range peeked {
		if pk.Err != nil {
			t.Recheck([]int{parts[i]})
			err = pk.Err
			continue
		}
		for k, s := range pk.Scores {
			heads = append(heads, head{s, pk.IDs[k], i})
		}
	}
	// As a ready set ranks its jobs: by score, then by id.
	slices.SortStableFunc(heads, func(a, b head) int { return cmp.Or(cmp.Compare(a.score, b.score), cmp.Compare(a.id, b.id)) })
	count := make([]int, len(parts))
	for _, h := range heads[:min(len(heads), max)] {
		if count[h.i] == 0 {
			best, bestSeen = append(best, parts[h.i]), append(bestSeen, seen[h.i])
		}
		count[h.i]++
	}
	for _, p := range best {
		take = append(take, count[slices.Index(parts, p)])
	}
	for i, pk := range peeked {
		if pk.Err == nil && count[i] == 0 {
			t.Learn(parts[i], seen[i], at, pk.NowMs, pk.NextMs, pk.Paused)
		}
	}
	if take == nil {
		take = []int{}
	}
	return best, bestSeen, take, err
}

// sortByPriority puts jobs from several partitions in the order one partition hands them out:
// by ready score (highest priority first, then earliest due time; a beanstalkd priority alone
// for the jobs that have one, as ready_score in the scripts' lib.lua), then by id.
func sortByPriority(jobs []*Job) { slices.SortStableFunc(jobs, readyOrder) }

// readyOrder compares two due jobs as a ready set ranks them: by ready score, then by id.
func readyOrder(a, b *Job) int {
	return cmp.Or(cmp.Compare(readyScore(a), readyScore(b)), cmp.Compare(a.ID, b.ID))
}

// readyScore is a due job's score in its ready set.
func readyScore(j *Job) float64 {
	if j.BeanstalkdPriority != nil {
		return float64(*j.BeanstalkdPriority)
	}
	return float64(-j.Priority)*(1<<43) + float64(j.RunAt.UnixMilli())
}

// reserveOnce runs one reserve call. When its answer is lost it sends the same call again (at
// most a few times, while ctx lasts), which answers as the first run did; when that fails, it
// abandons the call and returns the error, with Acked telling which acks went through (nil),
// which were refused (ErrLeaseLost) and which are still to be sent (an error).
func (c *Client) reserveOnce(ctx context.Context, part keys.Partition, rc store.ReserveCall) (store.Reserved, error) {
	res, err := c.store.Reserve(ctx, part, rc)
	for try := 1; err != nil && store.OutcomeUnknown(err) && ctx.Err() == nil && try <= 3; try++ {
		sleep(ctx, backoffDelay(try))
		if ctx.Err() == nil {
			res, err = c.store.Reserve(ctx, part, rc)
		}
	}
	if err == nil {
		return res, nil
	}
	acked := repeat(err, len(rc.Acks))
	if store.OutcomeUnknown(err) {
		if ran, got, aerr := c.abandonCall(ctx, part, rc); aerr == nil && ran {
			acked = got
		} else if aerr != nil {
			c.log.Warn("delayq: a reserve whose answer was lost could not be undone: its jobs come back after their TTR", "partition", part.Jobs(), "err", aerr)
		}
	}
	return store.Reserved{Acked: acked}, err
}

// abandon undoes reserve calls whose jobs nobody will read: their jobs are due again at once.
func (c *Client) abandon(ctx context.Context, calls []partitionCall) {
	for _, pc := range calls {
		if _, _, err := c.abandonCall(ctx, pc.part, pc.call); err != nil {
			c.log.Warn("delayq: putting back jobs nobody read: they come back after their TTR", "partition", pc.part.Jobs(), "err", err)
		}
	}
}

// abandonCall abandons one reserve call, trying a few times for about two seconds, whether or
// not ctx has ended: it is the cleanup of ctx's end.
func (c *Client) abandonCall(ctx context.Context, part keys.Partition, rc store.ReserveCall) (ran bool, acked []error, err error) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	for try := 0; ; try++ {
		ran, acked, err = c.store.Abandon(actx, part, rc)
		if err == nil || try == 3 || actx.Err() != nil {
			return ran, acked, err
		}
		sleep(actx, backoffDelay(try+1))
	}
}

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

// Lease names one delivery of a job: what Ack, Nack, Touch and Release act on. Job.Lease
// returns it for a reserved job; a consumer that keeps only the three strings (an HTTP client,
// say) builds it from them.
type Lease struct {
	Topic string
	ID    string
	Token string
}

// Ack marks a reserved job done and removes it. A lease that is not the job's current one is
// ErrLeaseLost, and the job is left as it is. Concurrent calls share round trips to Redis.
func (c *Client) Ack(ctx context.Context, l Lease) (err error) {
	ctx, span := c.settleSpan(ctx, tracing.Ack, l)
	defer func() { tracing.End(span, err) }()
	p, err := c.existing(ctx, l.Topic, l.ID)
	if err != nil {
		return err
	}
	err, ok := c.acker.Do(ctx, ackReq{part: p, lease: store.Lease{ID: l.ID, Token: l.Token}})
	if !ok {
		return ctx.Err()
	}
	return err
}

// NackOptions say how a failed attempt is retried.
type NackOptions struct {
	// Error is kept as the job's LastError.
	Error string
	// Delay, when set, is the wait before the retry instead of the job's backoff step.
	Delay *time.Duration
	// Dead sends the job to the dead letters whatever retries it has left.
	Dead bool
}

// Nack ends a reserved job's attempt as failed. The job is due again after its backoff step (or
// o.Delay); when its retries are used up, or o.Dead is set, it goes to the dead letters. It
// reports whether the job went dead. A stale lease is ErrLeaseLost.
func (c *Client) Nack(ctx context.Context, l Lease, o NackOptions) (dead bool, err error) {
	delayMs := int64(-1)
	if o.Delay != nil {
		if *o.Delay < 0 || *o.Delay > c.cfg.Limits.MaxDelay {
			return false, invalid("delay", "%s is outside 0 to %s", ms(*o.Delay), ms(c.cfg.Limits.MaxDelay))
		}
		delayMs = ceilMs(*o.Delay)
	}
	ctx, span := c.settleSpan(ctx, tracing.Nack, l)
	defer func() {
		tracing.Set(span, deadKey.Bool(dead))
		tracing.End(span, err)
	}()
	o.Error = truncateUTF8(o.Error, maxErrorText)
	p, err := c.existing(ctx, l.Topic, l.ID)
	if err != nil {
		return false, err
	}
	return c.store.Nack(ctx, p, l.ID, l.Token, o.Error, delayMs, o.Dead)
}

// Touch extends a lease by ttr from now (zero: the job's TTR) and returns the new deadline.
func (c *Client) Touch(ctx context.Context, l Lease, ttr time.Duration) (time.Time, error) {
	lim := c.cfg.Limits
	if ttr != 0 && (ttr < lim.MinTTR || ttr > lim.MaxTTR) {
		return time.Time{}, invalid("ttr", "%s is outside %s to %s", ms(ttr), ms(lim.MinTTR), ms(lim.MaxTTR))
	}
	p, err := c.existing(ctx, l.Topic, l.ID)
	if err != nil {
		return time.Time{}, err
	}
	deadline, err := c.store.Touch(ctx, p, l.ID, l.Token, ttr.Milliseconds())
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(deadline).UTC(), nil
}

// ReleaseOptions say when a released job is due again. The zero value releases it due at once.
type ReleaseOptions struct {
	// Delay, when set, makes the job due this long after the release.
	Delay *time.Duration
	// RunAt, when set instead of Delay, makes the job due then; a past time means due now.
	RunAt time.Time
}

// snooze reports whether a release with o is a snooze: one that asks for a time.
func (o ReleaseOptions) snooze() bool { return o.Delay != nil || !o.RunAt.IsZero() }

// Release gives a lease back unfinished without counting the attempt. With no delay and no
// RunAt the job is due again at once, as a Worker shutting down leaves its jobs. With either,
// the release is a snooze, the consumer's choice to put the job back for later: the job counts
// one more Snoozes, and when that passes its MaxSnoozes it goes to the dead letters instead,
// with a LastError that says so. Release reports whether it did. A stale lease is ErrLeaseLost;
// releasing a lease again answers as the first release did.
func (c *Client) Release(ctx context.Context, l Lease, o ReleaseOptions) (dead bool, err error) {
	var delayMs, runAtMs int64
	if o.Delay != nil {
		if !o.RunAt.IsZero() {
			return false, invalid("run_at", "give a delay or a run_at, not both")
		}
		if *o.Delay < 0 || *o.Delay > c.cfg.Limits.MaxDelay {
			return false, invalid("delay", "%s is outside 0 to %s", ms(*o.Delay), ms(c.cfg.Limits.MaxDelay))
		}
		delayMs = ceilMs(*o.Delay)
	}
	if !o.RunAt.IsZero() {
		if time.Until(o.RunAt) > c.cfg.Limits.MaxDelay {
			return false, invalid("run_at", "%s is more than %s ahead", o.RunAt.Format(time.RFC3339Nano), ms(c.cfg.Limits.MaxDelay))
		}
		if runAtMs = ceilUnixMs(o.RunAt); runAtMs <= 0 {
			return false, invalid("run_at", "%s is not after 1970-01-01", o.RunAt.Format(time.RFC3339Nano))
		}
	}
	ctx, span := c.settleSpan(ctx, tracing.Release, l)
	defer func() {
		tracing.Set(span, deadKey.Bool(dead))
		tracing.End(span, err)
	}()
	p, err := c.existing(ctx, l.Topic, l.ID)
	if err != nil {
		return false, err
	}
	return c.store.Release(ctx, p, l.ID, l.Token, delayMs, runAtMs, o.snooze())
}

// deadKey is the attribute of a nack or release span that says whether the job went dead.
const deadKey = attribute.Key("delayq.job.dead")

// settleSpan starts the span of an ack, nack or release of l.
func (c *Client) settleSpan(ctx context.Context, op tracing.Op, l Lease) (context.Context, trace.Span) {
	ctx, span := c.trace.Start(ctx, op, l.Topic)
	if span.IsRecording() { // here, not in Start's attributes: those would be made for every span
		span.SetAttributes(semconv.MessagingMessageID(l.ID))
	}
	return ctx, span
}

// maxErrorText bounds the error text a job keeps.
const maxErrorText = 4096

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
