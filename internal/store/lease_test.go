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
