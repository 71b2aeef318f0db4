package store

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/keys"
)

func TestEnqueueReplayAnswersCreated(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	enqueueOne(t, s, p, "old", 0)
	jobs := []NewJob{{ID: "new", DelayMs: 5000, TTRMs: 1000, Body: []byte("a")}, {ID: "old", TTRMs: 1000}}
	call := s.enqueueCall(p, jobs)
	first, err := s.run(ctx, enqueueScript, call).Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	s.SetClockOffset(2000) // the replay runs later
	again, err := s.run(ctx, enqueueScript, call).Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, again); diff != "" {
		t.Fatalf("replay answered differently (-first +replay):\n%s", diff)
	}
	if first[1] != 1 || first[4] != 0 {
		t.Fatalf("first run: %v, want new added and old existing", first)
	}
	if c := counts(t, s, p); c.Delayed != 1 || c.Ready != 1 {
		t.Fatalf("after replay: %+v", c)
	}
	// A new call with the same job is a repeat of the first: it answers the first's times.
	rep := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{jobs[:1]})
	if a := rep[0].Jobs[0]; a.Err != nil || a.CreatedMs != first[0] || a.RunAtMs != first[2] {
		t.Fatalf("the same job again: %+v, want created %d, run at %d", a, first[0], first[2])
	}
	// A call holding a repeat replays it too.
	mixed := s.enqueueCall(p, []NewJob{jobs[0], {ID: "newer", TTRMs: 1000}})
	m1, err := s.run(ctx, enqueueScript, mixed).Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	m2, err := s.run(ctx, enqueueScript, mixed).Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m1, m2); diff != "" || m1[1] != 2 || m1[4] != 1 {
		t.Fatalf("a call with a repeat and a new job: %v, then %v", m1, m2)
	}
	// With another body it is a duplicate.
	other := jobs[0]
	other.Body = []byte("b")
	dup := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{{other}})
	if !errors.Is(dup[0].Jobs[0].Err, ErrExists) {
		t.Fatalf("another job with the id: %+v, want ErrExists", dup[0])
	}
}

func TestReserveReplayReturnsTheSameJobs(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	for _, id := range []string{"a", "b", "c"} {
		enqueueOne(t, s, p, id, 0)
	}
	rc := ReserveCall{Call: NewCallID(), Secret: "secret", Lane: LanePull, Max: 2, Bulk: 100}
	first, err := s.Reserve(ctx, p, rc)
	if err != nil || len(first.Jobs) != 2 {
		t.Fatalf("first reserve: %d jobs, %v", len(first.Jobs), err)
	}
	if first.Jobs[0].Lease == first.Jobs[1].Lease {
		t.Fatalf("two jobs of one reserve share the lease %q", first.Jobs[0].Lease)
	}
	s.SetClockOffset(3000) // the replay comes later
	again, err := s.Reserve(ctx, p, rc)
	if err != nil {
		t.Fatal(err)
	}
	// The same jobs and leases, and the server's clock as it is at the replay: a caller that
	// learned the clock from the first run's reading would wake up late by the delay.
	if d := again.NowMs - first.NowMs; d < 3000 || d > 60_000 {
		t.Errorf("replay's clock %d ms after the first run's, want the 3 s moved on", d)
	}
	again.NowMs = first.NowMs
	if diff := cmp.Diff(first, again); diff != "" {
		t.Fatalf("replay answered differently (-first +replay):\n%s", diff)
	}
	if c := counts(t, s, p); c.Ready != 1 || c.Reserved != 2 {
		t.Fatalf("after replay: %+v, want 1 ready and 2 reserved", c)
	}
	// One job's lease does not ack another.
	errs, _ := s.AckMany(ctx, []keys.Partition{p}, [][]Lease{{{ID: first.Jobs[1].ID, Token: first.Jobs[0].Lease}}})
	if !errors.Is(errs[0][0], ErrLeaseLost) {
		t.Fatalf("ack of %s with the lease of %s: %v", first.Jobs[1].ID, first.Jobs[0].ID, errs[0][0])
	}
}

func TestAbandonPutsLeasedJobsBack(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	enqueueOne(t, s, p, "a", 0)
	enqueueOne(t, s, p, "b", 0)
	rc := ReserveCall{Call: NewCallID(), Secret: "s1", Lane: LanePull, Max: 1, Bulk: 100}
	first, err := s.Reserve(ctx, p, rc)
	if err != nil || len(first.Jobs) != 1 || first.Jobs[0].ID != "a" {
		t.Fatalf("reserve: %+v, %v", first, err)
	}
	ran, _, err := s.Abandon(ctx, p, rc)
	if err != nil || !ran {
		t.Fatalf("Abandon = %v, %v", ran, err)
	}
	if c := counts(t, s, p); c.Ready != 2 || c.Reserved != 0 {
		t.Fatalf("after abandon: %+v", c)
	}
	// The job keeps its place and its attempt count: the next reserve gets it first, as attempt 1.
	next, err := s.Reserve(ctx, p, ReserveCall{Call: NewCallID(), Secret: "s2", Lane: LanePull, Max: 1, Bulk: 100})
	if err != nil || len(next.Jobs) != 1 || next.Jobs[0].ID != "a" || next.Jobs[0].Attempts != 1 {
		t.Fatalf("reserve after abandon: %+v, %v", next.Jobs, err)
	}
	// A replay of the abandoned call leases nothing now.
	again, err := s.Reserve(ctx, p, rc)
	if err != nil || len(again.Jobs) != 0 {
		t.Fatalf("replay of the abandoned call: %+v, %v", again.Jobs, err)
	}

	// A call abandoned before it ran never runs.
	late := ReserveCall{Call: NewCallID(), Secret: "s3", Lane: LanePull, Max: 5, Bulk: 100}
	if ran, _, err := s.Abandon(ctx, p, late); err != nil || ran {
		t.Fatalf("Abandon of a call that never ran = %v, %v", ran, err)
	}
	if _, err := s.Reserve(ctx, p, late); err == nil {
		t.Fatalf("an abandoned call ran after all")
	}
	if c := counts(t, s, p); c.Ready != 1 || c.Reserved != 1 {
		t.Fatalf("after the late call: %+v", c)
	}
}

func TestSettleReplaysAnswerTheFirstOutcome(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	for _, id := range []string{"ack", "nack", "dead", "release"} {
		enqueueOne(t, s, p, id, 0)
	}
	r, err := s.Reserve(ctx, p, ReserveCall{Call: NewCallID(), Secret: "x", Lane: LanePull, Max: 4, Bulk: 100})
	if err != nil || len(r.Jobs) != 4 {
		t.Fatalf("reserve: %d, %v", len(r.Jobs), err)
	}
	lease := map[string]string{}
	for _, j := range r.Jobs {
		lease[j.ID] = j.Lease
	}
	for range 2 {
		acked, errs := s.AckMany(ctx, []keys.Partition{p}, [][]Lease{{{ID: "ack", Token: lease["ack"]}}})
		if errs[0] != nil || acked[0][0] != nil {
			t.Fatalf("ack: %v %v", acked, errs)
		}
		if dead, err := s.Nack(ctx, p, "nack", lease["nack"], "boom", 60000, false); err != nil || dead {
			t.Fatalf("nack: %v %v", dead, err)
		}
		if dead, err := s.Nack(ctx, p, "dead", lease["dead"], "poison", -1, true); err != nil || !dead {
			t.Fatalf("nack dead: %v %v", dead, err)
		}
		if _, err := s.Release(ctx, p, "release", lease["release"], 0, 0, false); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
	if c := counts(t, s, p); c.Delayed != 1 || c.Ready != 1 || c.Reserved != 0 || c.Dead != 1 {
		t.Fatalf("after the replays: %+v", c)
	}
	rec, err := s.Get(ctx, p, "nack")
	if err != nil || rec.Attempts != 1 {
		t.Fatalf("the nacked job counts %d attempts (%v), want 1", rec.Attempts, err)
	}
	// Another lease of a settled job still answers lease lost.
	if _, err := s.Release(ctx, p, "nack", "made-up", 0, 0, false); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("release with a made-up lease: %v", err)
	}
}

func TestCancelReplayAnswersCancelled(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	enqueueOne(t, s, p, "a", 0)
	call := write(p, NewCallID(), "a")
	for i := range 2 {
		if n, err := s.run(ctx, cancelScript, call).Int64(); err != nil || n != 1 {
			t.Fatalf("cancel run %d: %d, %v", i+1, n, err)
		}
	}
	if err := s.Cancel(ctx, p, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a new cancel: %v, want ErrNotFound", err)
	}
}

// A reserve that makes a lease end before any other announces its deadline on the partition's
// channel, so that the processes that expire leases wake at that deadline.
func TestReserveAnnouncesTheEarliestLeaseDeadline(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	sub := s.Client().SSubscribe(ctx, p.Notify())
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	enqueueOne(t, s, p, "a", 0)
	if _, err := sub.ReceiveMessage(ctx); err != nil { // the enqueue's notice
		t.Fatal(err)
	}
	r, err := s.Reserve(ctx, p, ReserveCall{Call: NewCallID(), Secret: "x", Lane: LanePull, Max: 1, Bulk: 10, TTRMs: 700})
	if err != nil || len(r.Jobs) != 1 {
		t.Fatalf("reserve: %v, %v", r.Jobs, err)
	}
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprint(r.Jobs[0].LeaseDeadlineMs, " lease"); msg.Payload != want {
		t.Fatalf("notice %q after the reserve, want the lease deadline %s", msg.Payload, want)
	}
}

// A call whose jobs are repeats of an earlier enqueue, or existed, records nothing but that, so
// a second run of it (go-redis re-sending it after a lost reply) must not take the records of
// those jobs for its own: when the job was acked or cancelled in between, the second run must
// not store it again. (Two jobs a call: a call of one job whose id the enqueuer made is named
// after it, and a second call of it is the same call, see TestLoneEnqueue….)
func TestEnqueueReplayOfARepeatDoesNotBringBackACancelledJob(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	s.SetReplayWindow(30 * time.Second)
	job := NewJob{ID: "once", DelayMs: 0, TTRMs: 30000, MaxRetries: 3, Body: []byte("x")}
	other := NewJob{ID: "other", DelayMs: 0, TTRMs: 30000, MaxRetries: 3, Body: []byte("y")}
	first := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{{job, other}})
	if first[0].Err != nil || first[0].Jobs[0].Err != nil {
		t.Fatalf("first enqueue: %+v", first[0])
	}
	// The caller lost the answer and sends the jobs again: a repeat.
	call := s.enqueueCall(p, []NewJob{job, other})
	rep, err := s.run(ctx, enqueueScript, call).Int64Slice()
	if err != nil || rep[1] != 2 {
		t.Fatalf("the repeat: %v, %v; want status 2", rep, err)
	}
	// The job is cancelled (or acked) before go-redis re-sends the repeat's call.
	if err := s.Cancel(ctx, p, "once"); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	again, err := s.run(ctx, enqueueScript, call).Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, p, "once"); err == nil {
		t.Fatalf("the second run of the repeat's call (answer %v, first run %v) stored the cancelled job again", again, rep)
	}
	if again[1] != rep[1] || again[2] != rep[2] || again[3] != rep[3] {
		t.Errorf("the second run answered %v, the first %v", again, rep)
	}
}

// A call that replaced, kept or met an ended id answers its replay as it answered first, and
// replaces nothing twice.
func TestEnqueueReplayOfAConflictAnswersAsTheFirst(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	print := func(j NewJob) NewJob { j.Print = Fingerprint(j); return j }
	enqueueOne(t, s, p, "kept", 60000)
	enqueueOne(t, s, p, "replaced", 60000)
	done := print(NewJob{ID: "done", TTRMs: 1000, UniqueForMs: 60000})
	if res := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{{done}}); res[0].Jobs[0].Err != nil {
		t.Fatal(res[0].Jobs[0].Err)
	}
	if err := s.Cancel(ctx, p, "done"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, p, "done"); !errors.Is(err, ErrDone) {
		t.Fatalf("Get of the cancelled job = %v, want ErrDone", err)
	}
	jobs := []NewJob{
		print(NewJob{ID: "kept", TTRMs: 1000, Body: []byte("k"), OnConflict: ConflictKeep}),
		print(NewJob{ID: "replaced", TTRMs: 1000, Body: []byte("r"), DelayMs: 5000, OnConflict: ConflictReplace}),
		print(NewJob{ID: "done", TTRMs: 1000, Body: []byte("d")}),
	}
	call := s.enqueueCall(p, jobs)
	first, err := s.run(ctx, enqueueScript, call).Slice()
	if err != nil {
		t.Fatal(err)
	}
	s.SetClockOffset(2000) // the replay runs later
	again, err := s.run(ctx, enqueueScript, call).Slice()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, again); diff != "" {
		t.Fatalf("replay answered differently (-first +replay):\n%s", diff)
	}
	_, added, err := parseEnqueue(redis.NewCmdResult(first, nil), len(jobs))
	if err != nil {
		t.Fatal(err)
	}
	if !added[0].Kept || !added[1].Replaced || !errors.Is(added[2].Err, ErrDone) {
		t.Fatalf("outcomes %+v, want kept, replaced, done", added)
	}
	r, err := s.Get(ctx, p, "replaced")
	if err != nil || r.Replaces != 1 || string(r.Body) != "r" {
		t.Fatalf("the replaced job after the replay: %+v, %v; want one replace", r, err)
	}
}

// A lone enqueue (one job, whose id the enqueuer made) of a job that cannot be delivered
// within the replay window keeps no call record: the job's own record answers a second run of
// the call, with the first run's answer. One due sooner keeps its record.
func TestLoneEnqueueOfALaterJobKeepsNoCallRecord(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	s.SetReplayWindow(30 * time.Second)
	for _, c := range []struct {
		delayMs int64
		record  bool
	}{{30_000, false}, {3_600_000, false}, {29_999, true}, {0, true}} {
		job := NewJob{ID: fmt.Sprintf("lone-%d", c.delayMs), DelayMs: c.delayMs, TTRMs: 30000, MaxRetries: 3, Body: []byte("x")}
		call := s.enqueueCall(p, []NewJob{job})
		records := len(s.rdb.Keys(ctx, p.Call("*")).Val())
		first, err := s.run(ctx, enqueueScript, call).Int64Slice()
		if err != nil || first[1] != addedNew {
			t.Fatalf("delay %d ms: %v, %v", c.delayMs, first, err)
		}
		if n := len(s.rdb.Keys(ctx, p.Call("*")).Val()) - records; (n == 1) != c.record {
			t.Errorf("delay %d ms: %d call records, want a record %v", c.delayMs, n, c.record)
		}
		s.SetClockOffset(1000) // the second run comes later
		again, err := s.run(ctx, enqueueScript, call).Int64Slice()
		s.SetClockOffset(0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first, again); diff != "" {
			t.Errorf("delay %d ms: the second run answered differently (-first +second):\n%s", c.delayMs, diff)
		}
	}
	if n := s.rdb.HLen(ctx, p.Jobs()).Val(); n != 4 {
		t.Fatalf("%d jobs, want 4", n)
	}
}

// What moves a job ahead of its due time or ends it within the replay window keeps the record
// of the lone enqueue that made it and recorded nothing: a second run of that enqueue answers
// as the first did, and the job is neither added again nor run twice.
func TestLoneEnqueueReplayAfterTheJobWasMovedOrEnded(t *testing.T) {
	for _, c := range []struct {
		name string
		act  func(*testing.T, *Store, keys.Partition, string)
	}{
		{"cancelled", func(t *testing.T, s *Store, p keys.Partition, id string) {
			if err := s.Cancel(testCtx(t), p, id); err != nil {
				t.Fatal(err)
			}
		}},
		{"rescheduled to now and acked", func(t *testing.T, s *Store, p keys.Partition, id string) {
			if _, err := s.Reschedule(testCtx(t), p, id, true, 0); err != nil {
				t.Fatal(err)
			}
			reserveAndAck(t, s, p)
		}},
		{"kicked and acked", func(t *testing.T, s *Store, p keys.Partition, id string) {
			if moved, err := s.KickDelayed(testCtx(t), p, []string{id}); err != nil || len(moved) != 1 {
				t.Fatalf("kick: %v, %v", moved, err)
			}
			reserveAndAck(t, s, p)
		}},
		{"reserved by id and acked", func(t *testing.T, s *Store, p keys.Partition, id string) {
			r, err := s.ReserveJob(testCtx(t), p, id)
			if err != nil {
				t.Fatal(err)
			}
			if _, errs := s.AckMany(testCtx(t), []keys.Partition{p}, [][]Lease{{{ID: id, Token: r.Lease}}}); errs[0] != nil {
				t.Fatal(errs[0])
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, p := newTestStore(t)
			ctx := testCtx(t)
			s.SetReplayWindow(30 * time.Second)
			job := NewJob{ID: "01JD3Q8ZQ4N9X7M2K5T6V8W0YB", DelayMs: 3_600_000, TTRMs: 30000, MaxRetries: 3, Body: []byte("x")}
			call := s.enqueueCall(p, []NewJob{job})
			first, err := s.run(ctx, enqueueScript, call).Int64Slice()
			if err != nil || first[1] != addedNew {
				t.Fatalf("enqueue: %v, %v", first, err)
			}
			c.act(t, s, p, job.ID)
			again, err := s.run(ctx, enqueueScript, call).Int64Slice()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(first, again); diff != "" {
				t.Errorf("the second run answered differently (-first +second):\n%s", diff)
			}
			if n := s.rdb.HLen(ctx, p.Jobs()).Val(); n != 0 {
				t.Errorf("the second run of the enqueue added the job again")
			}
		})
	}
}

// reserveAndAck leases the partition's one due job and acks it.
func reserveAndAck(t *testing.T, s *Store, p keys.Partition) {
	t.Helper()
	ctx := testCtx(t)
	r, err := s.Reserve(ctx, p, ReserveCall{Call: NewCallID(), Secret: "s", Lane: LanePull, Max: 1, Bulk: 10})
	if err != nil || len(r.Jobs) != 1 {
		t.Fatalf("reserve: %v, %v", r.Jobs, err)
	}
	if _, errs := s.AckMany(ctx, []keys.Partition{p}, [][]Lease{{{ID: r.Jobs[0].ID, Token: r.Jobs[0].Lease}}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
}
