package store

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tinylib/msgp/msgp"

	"github.com/delayq/delayq/internal/keys"
)

// A job's record is the data format: what one version stored, the next must read. These golden
// bytes must never change; a new field goes at the end of the record, where an older record
// simply lacks it.

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
