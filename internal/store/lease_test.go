package store

import (
	"testing"
	"time"

	"github.com/delayq/delayq/internal/keys"
)

// ExpireLeases fails every lease whose deadline has passed, once however often it runs, counts
// them, and records each attempt's end in the history at its deadline, not when it ran.
func TestExpireLeasesEndsAttemptsAtTheirDeadline(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	s.SetArchive(100, true)
	res := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{{
		{ID: "last", TTRMs: 30000, MaxRetries: 0, Body: []byte("x")},
		{ID: "retried", TTRMs: 30000, MaxRetries: 3, Body: []byte("y")},
	}})
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	r, err := s.Reserve(ctx, p, ReserveCall{Call: NewCallID(), Secret: "x", Lane: LanePull, Max: 2, Bulk: 10, TTRMs: 200})
	if err != nil || len(r.Jobs) != 2 {
		t.Fatalf("reserve: %v, %v", r.Jobs, err)
	}
	deadline := r.Jobs[0].LeaseDeadlineMs

	if out := s.ExpireLeases(ctx, []keys.Partition{p}, 10); out[0].Err != nil || out[0].Count != 0 || out[0].NextMs != deadline {
		t.Fatalf("before the deadline: %+v; want nothing expired, next %d", out[0], deadline)
	}
	s.SetClockOffset(time.Minute.Milliseconds())
	for run, want := range []int{2, 0} {
		out := s.ExpireLeases(ctx, []keys.Partition{p}, 10)
		if out[0].Err != nil || out[0].Count != want || out[0].NextMs != -1 {
			t.Fatalf("run %d after the deadline: %+v; want %d expired and nothing leased", run+1, out[0], want)
		}
	}
	if c := counts(t, s, p); c.Reserved != 0 || c.Dead != 1 || c.LeasesExpired != 2 {
		t.Fatalf("counts %+v; want 0 reserved, 1 dead, 2 leases expired", c)
	}
	entries, err := s.ReadHistory(ctx, p, "test", 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]string{}
	for _, e := range entries {
		outcomes[e.Record.ID] = e.Outcome
		if e.AtMs != deadline {
			t.Errorf("%s's history says %s at %d; want the lease deadline %d", e.Record.ID, e.Outcome, e.AtMs, deadline)
		}
	}
	if outcomes["last"] != "dead" || outcomes["retried"] != "failed" {
		t.Fatalf("history outcomes %v; want last dead, retried failed", outcomes)
	}
}

// A snooze gives the lease back for later without counting the attempt and counts a snooze;
// a release that is no snooze counts neither; past max snoozes the job goes dead through the
// failure path, with the history saying so; a replay of that release answers as it did.
func TestReleaseCountsSnoozesUpToMaxSnoozes(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	s.SetArchive(100, true)
	s.SetReplayWindow(time.Minute)
	job := NewJob{ID: "s", TTRMs: 30000, MaxRetries: 3, Body: []byte("x"), MaxSnoozes: 2}
	if out := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{{job}}); out[0].Err != nil || out[0].Jobs[0].Err != nil {
		t.Fatalf("enqueue: %+v", out[0])
	}
	reserve := func() Record {
		t.Helper()
		r, err := s.Reserve(ctx, p, ReserveCall{Call: NewCallID(), Secret: NewCallID(), Lane: LanePull, Max: 1, Bulk: 10})
		if err != nil || len(r.Jobs) != 1 {
			t.Fatalf("reserve: %+v, %v", r.Jobs, err)
		}
		return r.Jobs[0]
	}
	get := func() Record {
		t.Helper()
		r, err := s.Get(ctx, p, "s")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	r := reserve()
	if dead, err := s.Release(ctx, p, "s", r.Lease, 0, 0, false); err != nil || dead {
		t.Fatalf("plain release: dead %v, %v", dead, err)
	}
	if g := get(); g.Snoozes != 0 || g.Attempts != 0 || g.MaxSnoozes != 2 {
		t.Fatalf("after a plain release: snoozes %d, attempts %d, max snoozes %d; want 0, 0, 2", g.Snoozes, g.Attempts, g.MaxSnoozes)
	}
	for i := 1; i <= 2; i++ {
		r = reserve()
		if dead, err := s.Release(ctx, p, "s", r.Lease, 1000, 0, true); err != nil || dead {
			t.Fatalf("snooze %d: dead %v, %v", i, dead, err)
		}
		g := get()
		if g.Snoozes != i || g.Attempts != 0 || g.State != StateDelayed || g.RunAtMs < r.LeaseDeadlineMs-30000+1000 {
			t.Fatalf("after snooze %d: %+v; want %d snoozes, 0 attempts, delayed 1 s", i, g, i)
		}
		s.SetClockOffset(s.ClockOffset() + 1000)
	}
	r = reserve()
	dead, err := s.Release(ctx, p, "s", r.Lease, 1000, 0, true)
	if err != nil || !dead {
		t.Fatalf("snooze 3 of at most 2: dead %v, %v; want dead", dead, err)
	}
	if again, err := s.Release(ctx, p, "s", r.Lease, 1000, 0, true); err != nil || !again {
		t.Fatalf("the same release again: dead %v, %v; want the first answer", again, err)
	}
	g := get()
	const why = "snoozed more than max_snoozes (2) times"
	if g.State != StateDead || g.Snoozes != 3 || g.Attempts != 1 || g.LastError != why {
		t.Fatalf("after snooze 3: state %d, snoozes %d, attempts %d, last error %q; want dead, 3, 1, %q", g.State, g.Snoozes, g.Attempts, g.LastError, why)
	}
	entries, err := s.ReadHistory(ctx, p, "test", 10, time.Minute)
	if err != nil || len(entries) != 1 || entries[0].Outcome != "dead" || entries[0].Record.Snoozes != 3 {
		t.Fatalf("history %+v, %v; want the one dead outcome with 3 snoozes", entries, err)
	}
	if n, err := s.DeadRequeue(ctx, p, []string{"s"}, 10); err != nil || n != 1 {
		t.Fatalf("dead requeue: %d, %v", n, err)
	}
	if g := get(); g.Snoozes != 0 || g.Attempts != 0 || g.MaxSnoozes != 2 {
		t.Fatalf("requeued: snoozes %d, attempts %d, max snoozes %d; want 0, 0, 2", g.Snoozes, g.Attempts, g.MaxSnoozes)
	}
}

// A release at a time is due then, whatever the delay says.
func TestReleaseAtATime(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	enqueueOne(t, s, p, "t", 0)
	r, err := s.Reserve(ctx, p, ReserveCall{Call: NewCallID(), Secret: NewCallID(), Lane: LanePull, Max: 1, Bulk: 10})
	if err != nil || len(r.Jobs) != 1 {
		t.Fatalf("reserve: %+v, %v", r.Jobs, err)
	}
	at := r.Jobs[0].LeaseDeadlineMs + 3_600_000
	if _, err := s.Release(ctx, p, "t", r.Jobs[0].Lease, 0, at, true); err != nil {
		t.Fatal(err)
	}
	g, err := s.Get(ctx, p, "t")
	if err != nil || g.RunAtMs != at || g.State != StateDelayed || g.Snoozes != 1 {
		t.Fatalf("released at %d: %+v, %v; want delayed until then, 1 snooze", at, g, err)
	}
}

// A job whose id the enqueuer made has an unmarked lease token: its ack is given no ended
// marker's key and leaves none, while the marked leases acked beside it still find theirs, in
// order.
func TestUnmarkedLeasesAckWithoutMarkers(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	s.SetReplayWindow(30 * time.Second)
	rdb := s.Client()
	named := NewJob{ID: "named", TTRMs: 30000, MaxRetries: 3, Body: []byte("x")}
	named.Print = Fingerprint(named)
	res := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{{
		{ID: "made", TTRMs: 30000, MaxRetries: 3, Body: []byte("x")},
		named,
	}})
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	r, err := s.Reserve(ctx, p, ReserveCall{Call: NewCallID(), Secret: "s", Lane: LanePull, Max: 2, Bulk: 10})
	if err != nil || len(r.Jobs) != 2 {
		t.Fatalf("reserve: %v, %v", r.Jobs, err)
	}
	leases := map[string]Lease{}
	for _, j := range r.Jobs {
		leases[j.ID] = Lease{ID: j.ID, Token: j.Lease}
		if marked := markedLease(j.Lease); marked != (j.ID == "named") {
			t.Errorf("%s's lease %q: marked %v, want %v", j.ID, j.Lease, marked, !marked)
		}
	}
	if got := appendEnded(nil, p, []Lease{leases["made"], leases["named"]}); len(got) != 1 || got[0] != p.Ended("named") {
		t.Errorf("the ack of made and named is given the markers %q, want named's alone", got)
	}
	acked, errs := s.AckMany(ctx, []keys.Partition{p}, [][]Lease{{leases["made"], leases["named"]}})
	if errs[0] != nil || acked[0][0] != nil || acked[0][1] != nil {
		t.Fatalf("ack: %v, %v", acked, errs)
	}
	for id, want := range map[string]int64{"made": 0, "named": 1} {
		if n, err := rdb.Exists(ctx, p.Ended(id)).Result(); err != nil || n != want {
			t.Errorf("%s: %d ended markers (%v), want %d", id, n, err, want)
		}
	}
	if c := counts(t, s, p); c.Reserved != 0 {
		t.Errorf("%d jobs still reserved after their acks", c.Reserved)
	}
}

// An ack, whether on its own or riding with a reserve, leaves an ended marker for a job with a
// fingerprint, expiring when the replay window of the job's creation closes, and none for a
// job without one (even one whose record ends as a fingerprint would) or when the job is
// older than the window. A marker holds no body: it stays small whatever the job's size.
func TestAcksLeaveEndedMarkers(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	s.SetReplayWindow(30 * time.Second)
	rdb := s.Client()
	job := func(id string, print bool) NewJob {
		j := NewJob{ID: id, TTRMs: 30000, MaxRetries: 3, Body: make([]byte, 2000)}
		if print {
			j.Print = Fingerprint(j)
		}
		return j
	}
	// Its record ends in a fixstr of PrintLen bytes, as one with a fingerprint does.
	lookalike := NewJob{ID: "lookalike", TTRMs: 30000, MaxRetries: 3, Body: []byte("twelve bytes")}
	res := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{{job("alone", true), job("riding", true), job("none", false), lookalike}})
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	r, err := s.Reserve(ctx, p, ReserveCall{Call: NewCallID(), Secret: "s", Lane: LanePull, Max: 4, Bulk: 10})
	if err != nil || len(r.Jobs) != 4 {
		t.Fatalf("reserve: %v, %v", r.Jobs, err)
	}
	leases := map[string]Lease{}
	for _, j := range r.Jobs {
		leases[j.ID] = Lease{ID: j.ID, Token: j.Lease}
	}
	s.SetClockOffset(10000)
	acked, errs := s.AckMany(ctx, []keys.Partition{p}, [][]Lease{{leases["alone"], leases["none"], leases["lookalike"]}})
	if errs[0] != nil || acked[0][0] != nil || acked[0][1] != nil || acked[0][2] != nil {
		t.Fatalf("ack: %v, %v", acked, errs)
	}
	if _, err := s.Reserve(ctx, p, ReserveCall{Call: NewCallID(), Secret: "t", Lane: LanePull, Max: 1, Bulk: 10, Acks: []Lease{leases["riding"]}}); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"alone": true, "riding": true, "none": false, "lookalike": false} {
		ttl, err := rdb.PTTL(ctx, p.Ended(id)).Result()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case want && (ttl < 19*time.Second || ttl > 20*time.Second):
			t.Errorf("%s's marker expires in %v, want 20s (30s from its creation, 10s ago)", id, ttl)
		case !want && ttl != -2:
			t.Errorf("%s: a marker expiring in %v, want none: the job has no fingerprint", id, ttl)
		}
	}
	size, err := rdb.MemoryUsage(ctx, p.Ended("alone")).Result()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("an ended marker takes %d bytes (MEMORY USAGE)", size)
	if size > 160 {
		t.Errorf("an ended marker takes %d bytes, want at most 160", size)
	}

	// Past the window of its creation an ack leaves nothing.
	res = s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{{job("late", true)}})
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	r, err = s.Reserve(ctx, p, ReserveCall{Call: NewCallID(), Secret: "u", Lane: LanePull, Max: 1, Bulk: 10})
	if err != nil || len(r.Jobs) != 1 {
		t.Fatalf("reserve: %v, %v", r.Jobs, err)
	}
	s.SetClockOffset(10000 + 31000)
	if _, errs := s.AckMany(ctx, []keys.Partition{p}, [][]Lease{{{ID: "late", Token: r.Jobs[0].Lease}}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if n, _ := rdb.Exists(ctx, p.Ended("late")).Result(); n != 0 {
		t.Errorf("a job acked after the replay window of its creation left a marker")
	}
}

// A job with a unique_for leaves, once acked, a marker that keeps its id taken for exactly that
// long, whatever the replay window (here off), and that holds no body: a tombstone costs the
// same small number of bytes whatever the job's size.
func TestAckLeavesATombstoneForUniqueFor(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	s.SetReplayWindow(0)
	rdb := s.Client()
	j := NewJob{ID: "order-1", TTRMs: 30000, MaxRetries: 3, Body: make([]byte, 2000), UniqueForMs: 3_600_000}
	j.Print = Fingerprint(j)
	if res := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{{j}}); res[0].Err != nil || res[0].Jobs[0].Err != nil {
		t.Fatalf("enqueue: %+v", res[0])
	}
	r, err := s.Reserve(ctx, p, ReserveCall{Call: NewCallID(), Secret: "s", Lane: LanePull, Max: 1, Bulk: 10})
	if err != nil || len(r.Jobs) != 1 {
		t.Fatalf("reserve: %v, %v", r.Jobs, err)
	}
	acked, errs := s.AckMany(ctx, []keys.Partition{p}, [][]Lease{{{ID: j.ID, Token: r.Jobs[0].Lease}}})
	if errs[0] != nil || acked[0][0] != nil {
		t.Fatalf("ack: %v, %v", acked, errs)
	}
	ttl, err := rdb.PTTL(ctx, p.Ended(j.ID)).Result()
	if err != nil || ttl < 3599*time.Second || ttl > time.Hour {
		t.Fatalf("the tombstone expires in %v (%v), want an hour", ttl, err)
	}
	size, err := rdb.MemoryUsage(ctx, p.Ended(j.ID)).Result()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a tombstone takes %d bytes (MEMORY USAGE)", size)
	if size > 160 {
		t.Errorf("a tombstone takes %d bytes, want at most 160", size)
	}
}

// The acks of a job whose id the enqueuer made, alone or riding along with a reserve, run the
// bare variants of ack and reserve, which leave out what only jobs with a fingerprint reach;
// those of a job with one run the full scripts.
func TestAcksOfUnmarkedLeasesRunBareScripts(t *testing.T) {
	for _, printed := range []bool{false, true} {
		s, p := newTestStore(t)
		ctx := testCtx(t)
		s.SetReplayWindow(30 * time.Second)
		job := NewJob{ID: "j", TTRMs: 30000, MaxRetries: 3, Body: []byte("x")}
		if printed {
			job.Print = Fingerprint(job)
		}
		if res := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{{job}}); res[0].Err != nil || res[0].Jobs[0].Err != nil {
			t.Fatalf("enqueue: %+v", res[0])
		}
		r, err := s.Reserve(ctx, p, ReserveCall{Call: NewCallID(), Secret: "s", Lane: LanePull, Max: 1, Bulk: 10})
		if err != nil || len(r.Jobs) != 1 {
			t.Fatalf("reserve: %v, %v", r.Jobs, err)
		}
		lease := Lease{ID: "j", Token: r.Jobs[0].Lease}
		if _, errs := s.AckMany(ctx, []keys.Partition{p}, [][]Lease{{lease}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
		// A worker's ack rides along with its next reserve.
		if _, err := s.Reserve(ctx, p, ReserveCall{Call: NewCallID(), Secret: "t", Lane: LanePull, Max: 1, Bulk: 10, Acks: []Lease{lease}}); err != nil {
			t.Fatal(err)
		}
		// A reserve that acks nothing is bare whatever it leases.
		for _, c := range []struct {
			name   string
			sc     *luaScript
			loaded bool
		}{
			{"reserve", reserveScript, printed},
			{"ack", ackScript, printed},
			{"bare reserve", reserveBareScript, true},
			{"bare ack", ackBareScript, !printed},
		} {
			loaded, err := c.sc.Exists(ctx, s.Client()).Result()
			if err != nil {
				t.Fatal(err)
			}
			if loaded[0] != c.loaded {
				t.Errorf("a job with a fingerprint %v: %s loaded %v, want %v", printed, c.name, loaded[0], c.loaded)
			}
		}
	}
}
