package store

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/keys"
)

// printed gives j the fingerprint an enqueue with an id of the caller's gives it.
func printed(j NewJob) NewJob {
	j.Print = Fingerprint(j)
	return j
}

// Concurrent Enqueue calls of one partition share one script call (the Client coalesces them),
// so a job and a replace of it can meet in the same call: the job is then due when the
// replace asked, as its record says, and nowhere else.
func TestReplaceInTheCallThatAddsTheJobMakesItDueWhenTheReplaceAsked(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	jobs := []NewJob{
		printed(NewJob{ID: "x", DelayMs: 60000, TTRMs: 1000, Body: []byte("a")}),
		printed(NewJob{ID: "x", DelayMs: 7200000, TTRMs: 1000, Body: []byte("b"), OnConflict: ConflictReplace}),
	}
	res := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{jobs})
	if res[0].Err != nil || res[0].Jobs[0].Err != nil || !res[0].Jobs[1].Replaced {
		t.Fatalf("enqueue = %+v; want added, then replaced", res[0])
	}
	r, err := s.Get(ctx, p, "x")
	if err != nil {
		t.Fatal(err)
	}
	score, err := s.Client().ZScore(ctx, p.Delayed(), "x").Result()
	if err != nil {
		t.Fatal(err)
	}
	if int64(score) != r.RunAtMs || r.RunAtMs != res[0].Jobs[1].RunAtMs {
		t.Errorf("the job is due at %d in the delayed set, %d by its record, %d by the replace's answer; want one time",
			int64(score), r.RunAtMs, res[0].Jobs[1].RunAtMs)
	}
	// Due by its record only in two hours, the job must not be handed out at the first one's time.
	s.SetClockOffset(61000)
	got, err := s.Reserve(ctx, p, ReserveCall{Call: NewCallID(), Lane: LanePull, Max: 1, MaxBytes: 1 << 20, Secret: "s", Bulk: 100, TTRMs: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Jobs) != 0 {
		t.Errorf("reserved %q a minute after the enqueue, two hours before the due time its record and its answer give", got.Jobs[0].Body)
	}
}

// A job kept in the call that adds it is answered in the state it is in: delayed.
func TestKeepInTheCallThatAddsTheJobAnswersItsState(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	jobs := []NewJob{
		printed(NewJob{ID: "x", DelayMs: 60000, TTRMs: 1000, Body: []byte("a")}),
		printed(NewJob{ID: "x", DelayMs: 60000, TTRMs: 1000, Body: []byte("b"), OnConflict: ConflictKeep}),
	}
	res := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{jobs})
	if res[0].Err != nil || !res[0].Jobs[1].Kept {
		t.Fatalf("enqueue = %+v; want added, then kept", res[0])
	}
	if st := res[0].Jobs[1].Job.State; st != StateDelayed {
		t.Errorf("the kept job answered state %s, want delayed", stateNames[int64(st)])
	}
}

// The record layout: fields 16 to 18 come before the fingerprint only when one is set. A
// replace of a job whose record holds its fingerprint at 16 (no unique_for, or written before
// the fields existed) moves it to 19; the Go decoder reads both.
func TestReplaceOfAShortRecordKeepsEveryField(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	old := printed(NewJob{ID: "x", DelayMs: 60000, TTRMs: 1000, Body: []byte("a"), MaxRetries: 2,
		BackoffMs: []int64{5, 6}, Headers: map[string]string{"h": "1"}, MaxSnoozes: 3})
	if res := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{{old}}); res[0].Jobs[0].Err != nil {
		t.Fatal(res[0].Jobs[0].Err)
	}
	for _, j := range []NewJob{
		printed(NewJob{ID: "x", DelayMs: 1000, TTRMs: 2000, Body: []byte("b"), OnConflict: ConflictReplace}),
		printed(NewJob{ID: "x", DelayMs: 2000, TTRMs: 3000, Body: []byte("c"), UniqueForMs: 5000,
			Headers: map[string]string{"h": "2"}, OnConflict: ConflictReplace}),
		printed(NewJob{ID: "x", DelayMs: 3000, TTRMs: 4000, Body: []byte("d"), MaxSnoozes: 1, OnConflict: ConflictReplace}),
	} {
		res := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{{j}})
		if res[0].Err != nil || !res[0].Jobs[0].Replaced {
			t.Fatalf("replace with %q = %+v", j.Body, res[0])
		}
		r, err := s.Get(ctx, p, "x")
		if err != nil {
			t.Fatalf("Get after the replace with %q: %v", j.Body, err)
		}
		if string(r.Body) != string(j.Body) || r.TTRMs != j.TTRMs || r.MaxSnoozes != j.MaxSnoozes ||
			len(r.Headers) != len(j.Headers) || r.BackoffMs != nil || r.UniqueForMs != max(j.UniqueForMs, 0) {
			t.Errorf("after the replace with %q: %+v", j.Body, r)
		}
		if r.Replaces == 0 || r.ReplacedMs == 0 {
			t.Errorf("after the replace with %q: replaces %d at %d", j.Body, r.Replaces, r.ReplacedMs)
		}
	}
	// The last replace named no unique_for: the job's end leaves the id free but for the window.
	if err := s.Cancel(ctx, p, "x"); err != nil {
		t.Fatal(err)
	}
	s.SetClockOffset(40000)
	if _, err := s.Get(ctx, p, "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get past the window of a job that ended without unique_for = %v, want ErrNotFound", err)
	}
}

// The history a replaced job leaves when it ends carries its record as it was then: the
// replace's body, its unique_for and its replaces, read back by DecodeRecord.
func TestHistoryOfAReplacedJobDecodes(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	s.SetArchive(100, false)
	for _, j := range []NewJob{
		printed(NewJob{ID: "x", TTRMs: 1000, Body: []byte("a")}),
		printed(NewJob{ID: "x", TTRMs: 1000, Body: []byte("b"), UniqueForMs: 60000, Headers: map[string]string{"h": "v"}, OnConflict: ConflictReplace}),
	} {
		if res := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{{j}}); res[0].Err != nil || res[0].Jobs[0].Err != nil {
			t.Fatalf("enqueue %q: %+v", j.Body, res[0])
		}
	}
	if err := s.Cancel(ctx, p, "x"); err != nil {
		t.Fatal(err)
	}
	entries, err := s.ReadHistory(ctx, p, "c", 10, time.Minute)
	if err != nil || len(entries) != 1 {
		t.Fatalf("history: %+v, %v", entries, err)
	}
	r := entries[0].Record
	if string(r.Body) != "b" || r.UniqueForMs != 60000 || r.Replaces != 1 || r.ReplacedMs == 0 || r.Headers["h"] != "v" {
		t.Errorf("the history's record: %+v", r)
	}
}

// Unused features cost nothing: with the replay window off, no archive and no unique_for, an
// ack has no marker to write and no reason to read the job's record (a copy of its body into
// the script) before deleting it.
func TestAckWithoutReplayWindowOrUniqueForReadsNoRecord(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	s.SetReplayWindow(0)
	enqueueOne(t, s, p, "x", 0)
	r, err := s.Reserve(ctx, p, ReserveCall{Call: NewCallID(), Secret: "s", Lane: LanePull, Max: 1, Bulk: 10})
	if err != nil || len(r.Jobs) != 1 {
		t.Fatalf("reserve: %+v, %v", r, err)
	}
	if err := s.Client().ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	_, errs := s.AckMany(ctx, []keys.Partition{p}, [][]Lease{{{ID: "x", Token: r.Jobs[0].Lease}}})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	stats, err := s.Client().InfoMap(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	// One HGET reads the lease (owned in lib.lua); a second one reads the record.
	if hget := stats["Commandstats"]["cmdstat_hget"]; !strings.HasPrefix(hget, "calls=1,") {
		t.Errorf("the ack read more than the job's lease: HGET %s", hget)
	}
}
