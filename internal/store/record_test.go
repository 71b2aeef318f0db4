package store

import (
	"bytes"
	"encoding/hex"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tinylib/msgp/msgp"

	"github.com/delayq/delayq/internal/keys"
)

// goldenJob is a job with every field of a new job set.
var goldenJob = NewJob{
	ID: "order-42", Format: 1, Priority: 5, RunAtMs: 4102444800000, MaxRetries: 3, TTRMs: 30000,
	Body: []byte(`{"order":42}`), BackoffMs: []int64{15000, 180000}, Callback: "https://example.com/hook",
}

const (
	goldenHead = "05b868747470733a2f2f6578616d706c652e636f6d2f686f6f6bcd753000"
	goldenTail = "0103ac7b226f72646572223a34327d92cd3a98ce0002bf20"
	// goldenDead is the record of a dead job: goldenJob created at 1700000000000, due 2 s
	// later, failed 4 times, last error "boom", died at 1700000100000.
	goldenDead = "05b868747470733a2f2f6578616d706c652e636f6d2f686f6f6bcd753004cf0000018bcfe56800cd07d00103ac7b226f72646572223a34327d92cd3a98ce0002bf20a4626f6f6dcf0000018bcfe6eea0"
)

func TestNewRecordGolden(t *testing.T) {
	if got := hex.EncodeToString(recordHead(goldenJob)); got != goldenHead {
		t.Errorf("record head changed:\n%s\nwant\n%s", got, goldenHead)
	}
	if got := hex.EncodeToString(recordTail(goldenJob)); got != goldenTail {
		t.Errorf("record tail changed:\n%s\nwant\n%s", got, goldenTail)
	}
}

// The enqueue script stores head, created at, delay (each as the smallest unsigned MessagePack
// integer) and tail, in that order.
func TestStoredRecordGolden(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	out := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{{goldenJob}})
	if out[0].Err != nil || out[0].Jobs[0].Err != nil {
		t.Fatalf("enqueue: %+v", out[0])
	}
	stored, err := s.rdb.HGet(ctx, p.Jobs(), goldenJob.ID).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	var r Record
	if err := decodeRecord(stored, &r); err != nil {
		t.Fatal(err)
	}
	want := append([]byte(nil), recordHead(goldenJob)...)
	want = msgp.AppendUint64(want, uint64(r.CreatedMs)) // Lua's cmsgpack packs a positive number unsigned
	want = msgp.AppendUint64(want, uint64(goldenJob.RunAtMs-r.CreatedMs))
	want = append(want, recordTail(goldenJob)...)
	if !bytes.Equal(stored, want) {
		t.Fatalf("stored record\n%x\nwant\n%x", stored, want)
	}
}

func TestDecodeRecordGolden(t *testing.T) {
	b, _ := hex.DecodeString(goldenDead)
	var r Record
	if err := decodeRecord(b, &r); err != nil {
		t.Fatal(err)
	}
	want := Record{
		Priority: 5, Callback: "https://example.com/hook", TTRMs: 30000, Attempts: 4,
		CreatedMs: 1700000000000, RunAtMs: 1700000002000, Format: 1, MaxRetries: 3,
		Body: []byte(`{"order":42}`), BackoffMs: []int64{15000, 180000}, LastError: "boom",
		DiedMs: 1700000100000,
	}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Fatalf("decoded record (-want +got):\n%s", diff)
	}
}

var goldenHeaders = map[string]string{"traceparent": "00-ab", "b": "2"}

// liveHeaders are headers whose names Lua could mistake for array positions, and an empty
// value: a record rewritten by a script must keep them as a map of strings.
var liveHeaders = map[string]string{"traceparent": "00-ab", "1": "one", "2": "", "007": "x"}

// Headers follow died at, so a job with headers writes nils for the fields between, and the
// map lists its names in order: the same job must always encode to the same bytes.
func TestRecordTailWithHeadersGolden(t *testing.T) {
	const headers = "82" + "a162" + "a132" + "ab7472616365706172656e74" + "a5" + "30302d6162"
	tests := []struct {
		name string
		job  NewJob
		want string
	}{
		{"with backoff", func() NewJob { j := goldenJob; j.Headers = goldenHeaders; return j }(),
			goldenTail + "c0c0" + headers},
		{"default backoff", func() NewJob {
			j := goldenJob
			j.BackoffMs, j.Headers = nil, goldenHeaders
			return j
		}(), "0103ac7b226f72646572223a34327d" + "c0c0c0" + headers},
		{"empty map", func() NewJob { j := goldenJob; j.Headers = map[string]string{}; return j }(), goldenTail},
	}
	for _, tt := range tests {
		for range 5 { // map order varies from run to run
			if got := hex.EncodeToString(recordTail(tt.job)); got != tt.want {
				t.Fatalf("%s: record tail\n%s\nwant\n%s", tt.name, got, tt.want)
			}
		}
	}
}

// A snooze limit follows the headers and the snooze count, each nil when absent; a job without
// one stores no bytes for either, as records written before they existed did.
func TestRecordTailWithMaxSnoozesGolden(t *testing.T) {
	j := goldenJob
	j.MaxSnoozes = 3
	want := goldenTail + "c0c0" + "c0" + "c0" + "03"
	if got := hex.EncodeToString(recordTail(j)); got != want {
		t.Fatalf("record tail\n%s\nwant\n%s", got, want)
	}
	b := append(append([]byte(nil), recordHead(j)...), 0x01, 0x02) // created at 1, delay 2
	var r Record
	if err := decodeRecord(append(b, recordTail(j)...), &r); err != nil {
		t.Fatal(err)
	}
	if r.MaxSnoozes != 3 || r.Snoozes != 0 || r.Headers != nil {
		t.Fatalf("decoded max snoozes %d, snoozes %d, headers %v; want 3, 0, none", r.MaxSnoozes, r.Snoozes, r.Headers)
	}
}

func TestDecodeRecordHeaders(t *testing.T) {
	j := goldenJob
	j.BackoffMs, j.Headers = nil, goldenHeaders
	b := append(append([]byte(nil), recordHead(j)...), 0x01, 0x02) // created at 1, delay 2
	b = append(b, recordTail(j)...)
	var r Record
	if err := decodeRecord(b, &r); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(goldenHeaders, r.Headers); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	if r.BackoffMs != nil || r.LastError != "" || r.DiedMs != 0 {
		t.Errorf("the nils before the headers read as %v, %q, %d", r.BackoffMs, r.LastError, r.DiedMs)
	}
	if err := decodeRecord(b[:len(b)-3], &r); err == nil {
		t.Error("a record cut inside its headers decoded without an error")
	}
}

// Every script that rewrites a record (nack, expiry, release, reschedule, dead requeue) must
// write the headers back as the map they were.
func TestHeadersSurviveRecordRewrites(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	job := NewJob{ID: "h", TTRMs: 30000, MaxRetries: 1, Body: []byte("x"), Headers: liveHeaders}
	if out := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{{job}}); out[0].Err != nil || out[0].Jobs[0].Err != nil {
		t.Fatalf("enqueue: %+v", out[0])
	}
	check := func(step string) {
		t.Helper()
		r, err := s.Get(ctx, p, "h")
		if err != nil {
			t.Fatalf("%s: get: %v", step, err)
		}
		if diff := cmp.Diff(liveHeaders, r.Headers); diff != "" {
			t.Fatalf("%s: headers (-want +got):\n%s", step, diff)
		}
	}
	check("enqueue")
	lease := reserveOne(t, s, p)
	if _, err := s.Release(ctx, p, "h", lease, 0, 0, false); err != nil {
		t.Fatalf("release: %v", err)
	}
	check("release")
	if _, err := s.Reschedule(ctx, p, "h", true, 0); err != nil {
		t.Fatalf("reschedule: %v", err)
	}
	check("reschedule")
	for i := range 2 { // the second failure uses up the one retry
		lease = reserveOne(t, s, p)
		if _, err := s.Nack(ctx, p, "h", lease, "boom", 0, false); err != nil {
			t.Fatalf("nack %d: %v", i, err)
		}
		check("nack")
	}
	r, _ := s.Get(ctx, p, "h")
	if r.State != StateDead {
		t.Fatalf("state %d after two failures, want dead", r.State)
	}
	if n, err := s.DeadRequeue(ctx, p, []string{"h"}, 10); err != nil || n != 1 {
		t.Fatalf("dead requeue: %d, %v", n, err)
	}
	check("dead requeue")
}

// A repeated enqueue of a job with headers is told by its bytes, so it answers as a repeat. (Two
// jobs a call: a second call of one job whose id the enqueuer made is the same call.)
func TestEnqueueRepeatWithHeaders(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	s.SetReplayWindow(30 * time.Second)
	job := NewJob{ID: "rep", DelayMs: 60000, TTRMs: 30000, MaxRetries: 3, Body: []byte("x"),
		Headers: map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}}
	filler := NewJob{ID: "filler", DelayMs: 60000, TTRMs: 30000, MaxRetries: 3, Body: []byte("y")}
	first := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{{job, filler}})
	if first[0].Err != nil || first[0].Jobs[0].Err != nil {
		t.Fatalf("first enqueue: %+v", first[0])
	}
	for range 3 {
		again := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{{job, filler}})
		if again[0].Err != nil || again[0].Jobs[0].Err != nil || !again[0].Jobs[0].Repeat {
			t.Fatalf("the same enqueue again: %+v, want a repeat", again[0])
		}
	}
	other := job
	other.Headers = map[string]string{"a": "1"}
	if again := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{{other, filler}}); again[0].Jobs[0].Err != ErrExists {
		t.Fatalf("the same id with other headers: %+v, want ErrExists", again[0])
	}
}

// reserveOne leases the partition's one due job and returns its lease, checking that the
// reserved record carries its headers.
func reserveOne(t *testing.T, s *Store, p keys.Partition) string {
	t.Helper()
	got, err := s.Reserve(testCtx(t), p, ReserveCall{Call: NewCallID(), Secret: NewCallID(), Lane: LanePull, Max: 1, Bulk: 100})
	if err != nil || len(got.Jobs) != 1 {
		t.Fatalf("reserve: %+v, %v", got, err)
	}
	if diff := cmp.Diff(liveHeaders, got.Jobs[0].Headers); diff != "" {
		t.Fatalf("reserved headers (-want +got):\n%s", diff)
	}
	return got.Jobs[0].Lease
}

// A job's fingerprint covers what its enqueue asked but the trace headers, and is stored as
// its record's last field, in PrintLen+1 bytes beyond the nils that come before it; scripts
// that rewrite the record (a failed attempt) keep it there, and a record with one decodes as
// one without.
func TestFingerprint(t *testing.T) {
	// Part of the data format: a version that printed the same job otherwise would not know
	// the retries of enqueues an earlier one answered.
	const goldenPrint = "dc49a89e3bc06e7a3e9d6b84"
	print := Fingerprint(goldenJob)
	if got := hex.EncodeToString(print); got != goldenPrint {
		t.Errorf("fingerprint of goldenJob changed:\n%s\nwant\n%s", got, goldenPrint)
	}
	traced := goldenJob
	traced.Headers = map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate": "a=b"}
	if !bytes.Equal(Fingerprint(traced), print) {
		t.Errorf("trace headers changed the fingerprint")
	}
	for name, change := range map[string]func(j *NewJob){
		"body":     func(j *NewJob) { j.Body = []byte("{}") },
		"header":   func(j *NewJob) { j.Headers = map[string]string{"x-tenant": "a"} },
		"priority": func(j *NewJob) { j.Priority++ },
		"ttr":      func(j *NewJob) { j.TTRMs++ },
		"retries":  func(j *NewJob) { j.MaxRetries++ },
		"backoff":  func(j *NewJob) { j.BackoffMs = nil },
		"callback": func(j *NewJob) { j.Callback = "" },
		"format":   func(j *NewJob) { j.Format = 0 },
		"run_at":   func(j *NewJob) { j.RunAtMs++ },
		"a delay of the same ms": func(j *NewJob) {
			j.RunAtMs, j.DelayMs = 0, j.RunAtMs
		},
	} {
		other := goldenJob
		change(&other)
		if bytes.Equal(Fingerprint(other), print) {
			t.Errorf("another %s, the same fingerprint", name)
		}
	}

	withPrint := goldenJob
	withPrint.Print = print
	tail := recordTail(withPrint)
	// Last error, died at, headers, snoozes and max snoozes stand empty before it.
	want := append(append([]byte(nil), recordTail(goldenJob)...), 0xc0, 0xc0, 0xc0, 0xc0, 0xc0, 0xa0+PrintLen)
	if !bytes.Equal(tail, append(want, print...)) {
		t.Errorf("tail with a fingerprint\n%x\nwant the tail without, 5 nils and the fingerprint\n%x%x", tail, want, print)
	}
	t.Logf("the fingerprint adds %d bytes to a record without headers or backoff, %d to goldenJob's",
		len(recordTail(NewJob{Print: print}))-len(recordTail(NewJob{})), len(tail)-len(recordTail(goldenJob)))

	s, p := newTestStore(t)
	ctx := testCtx(t)
	withPrint.RunAtMs = 0
	withPrint.Print = Fingerprint(withPrint)
	if out := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{{withPrint}}); out[0].Err != nil || out[0].Jobs[0].Err != nil {
		t.Fatalf("enqueue: %+v", out[0])
	}
	r, err := s.Reserve(ctx, p, ReserveCall{Call: NewCallID(), Secret: "s", Lane: LanePush, Max: 1, Bulk: 10})
	if err != nil || len(r.Jobs) != 1 {
		t.Fatalf("reserve: %+v, %v", r, err)
	}
	if _, err := s.Nack(ctx, p, withPrint.ID, r.Jobs[0].Lease, "boom", 1000, false); err != nil {
		t.Fatal(err)
	}
	stored, err := s.rdb.HGet(ctx, p.Jobs(), withPrint.ID).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(stored, append([]byte{0xa0 + PrintLen}, withPrint.Print...)) {
		t.Errorf("after a failed attempt the record %x no longer ends in its fingerprint", stored)
	}
	got, err := s.Get(ctx, p, withPrint.ID)
	if err != nil || got.Attempts != 1 || got.LastError != "boom" || string(got.Body) != string(withPrint.Body) {
		t.Errorf("the record read back: %+v, %v", got, err)
	}
}
