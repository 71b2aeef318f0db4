package store

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/tinylib/msgp/msgp"
)

// Record states as scripts report them (lib.lua's S_ values).
const (
	StateDelayed  = 1
	StateReady    = 2
	StateReserved = 3
	StateDead     = 4
)

// RankBase marks a beanstalkd priority: a stored priority of RankBase + pri (pri from 0 to
// 2^32-1, most urgent first) ranks a job by pri alone among the due jobs, then by id, as
// beanstalkd does (see ready_score in scripts/lib.lua). Only the beanstalkd front end (cmd/delayq/internal/beanstalkd) stores one.
const RankBase = 1 << 40

// Record is a job as a script returns it (lib.lua's reply), times in Unix ms.
type Record struct {
	ID              string
	State           int
	Format          int
	Priority        int
	CreatedMs       int64
	RunAtMs         int64
	Attempts        int // deliveries so far, the current one included
	MaxRetries      int
	TTRMs           int64
	Body            []byte
	BackoffMs       []int64 // nil for the default
	Callback        string
	LastError       string
	Lease           string
	LeaseDeadlineMs int64             // 0 when not reserved
	DiedMs          int64             // 0 when not dead
	Headers         map[string]string // nil when the job has none
	Snoozes         int               // releases for later so far (see release.lua)
	MaxSnoozes      int               // 0 for no limit
	UniqueForMs     int64             // how long its id stays taken once it ends; 0 for not at all
	Replaces        int               // enqueues that replaced it (ConflictReplace)
	ReplacedMs      int64             // when the last one did, Unix ms; 0 when none did
}

// A stored record is a run of MessagePack values in the order of lib.lua's F_ fields: priority,
// callback URL, TTR, finished attempts, created at, delay, format, max retries, body, backoff,
// last error, died at, headers (a map of str to str, never empty), snoozes, max snoozes,
// unique_for, replaces, replaced at, and the fingerprint of what the enqueue asked (PrintLen
// bytes, for jobs enqueued with an id of the caller's, always the last field: the 16th when the
// three before it are absent, else the 19th); trailing nils are left out, so a job without
// headers, a snooze limit or a fingerprint stores no bytes for them, and a record written
// before a field existed reads it as zero. Strings are MessagePack str values, which Redis's cmsgpack reads
// (it refuses bin).

// PrintLen is the length of a job's fingerprint: 96 bits of SHA-256, beyond any search for
// another content with the same one (2^96 tries), stored in 13 bytes.
const PrintLen = 12

// Fingerprint returns what makes two enqueues of j the same: every field the caller chose
// (priority, callback URL, TTR, format, retries, body, backoff, headers) and its due time as
// asked (a delay, or a run_at), but not the trace headers (traceparent and tracestate), which
// a retry in a new span changes. An enqueue retried after its job ended is told by it (the
// marker the end leaves keeps it, see keys.Partition.Ended): the same id and fingerprint within
// the replay window answer the first enqueue's job.
func Fingerprint(j NewJob) []byte {
	_, traced := j.Headers["traceparent"]
	if _, ok := j.Headers["tracestate"]; ok || traced {
		kept := make(map[string]string, len(j.Headers))
		for name, value := range j.Headers {
			if name != "traceparent" && name != "tracestate" {
				kept[name] = value
			}
		}
		j.Headers = kept
	}
	j.Print = nil
	const tag = "delayq job 1\x00"
	b := make([]byte, 0, len(tag)+16+len(j.Callback)+9+tailSize(j))
	b = append(b, tag...)
	b = appendHead(b, j)
	if j.RunAtMs != 0 {
		b = binary.BigEndian.AppendUint64(append(b, 't'), uint64(j.RunAtMs))
	} else {
		b = binary.BigEndian.AppendUint64(append(b, 'd'), uint64(j.DelayMs))
	}
	if j.UniqueForMs != 0 {
		// Only when asked, so that the fingerprints of jobs without one stay as they were.
		b = binary.BigEndian.AppendUint64(append(b, 'u'), uint64(j.UniqueForMs))
	}
	sum := sha256.Sum256(appendTail(b, j))
	return append([]byte(nil), sum[:PrintLen]...)
}

// recordHead encodes the fields of a new job's record that come before created at.
func recordHead(j NewJob) []byte { return appendHead(make([]byte, 0, 16+len(j.Callback)), j) }

func appendHead(b []byte, j NewJob) []byte {
	b = msgp.AppendInt64(b, int64(j.Priority))
	if j.Callback == "" {
		b = msgp.AppendNil(b)
	} else {
		b = msgp.AppendString(b, j.Callback)
	}
	b = msgp.AppendUint64(b, uint64(j.TTRMs))
	return msgp.AppendUint64(b, 0) // attempts
}

// recordTail encodes the fields of a new job's record that come after the delay.
func recordTail(j NewJob) []byte { return appendTail(make([]byte, 0, tailSize(j)), j) }

// tailSize is about the size of j's record tail, to allocate it once.
func tailSize(j NewJob) int {
	n := 24 + len(j.Body) + 9*len(j.BackoffMs) + 11 + PrintLen
	for name, value := range j.Headers {
		n += 10 + len(name) + len(value)
	}
	return n
}

func appendTail(b []byte, j NewJob) []byte {
	b = msgp.AppendUint64(b, uint64(j.Format))
	b = msgp.AppendUint64(b, uint64(j.MaxRetries))
	b = msgp.AppendStringFromBytes(b, j.Body)
	if j.BackoffMs != nil {
		b = msgp.AppendArrayHeader(b, uint32(len(j.BackoffMs)))
		for _, ms := range j.BackoffMs {
			b = msgp.AppendUint64(b, uint64(ms))
		}
	}
	if len(j.Headers) == 0 && j.MaxSnoozes == 0 && j.Print == nil {
		return b
	}
	if j.BackoffMs == nil {
		b = msgp.AppendNil(b)
	}
	b = msgp.AppendNil(b) // last error
	b = msgp.AppendNil(b) // died at
	if len(j.Headers) > 0 {
		b = appendHeaders(b, j.Headers)
	} else {
		b = msgp.AppendNil(b)
	}
	if j.MaxSnoozes == 0 && j.Print == nil {
		return b
	}
	b = msgp.AppendNil(b) // snoozes
	if j.MaxSnoozes > 0 {
		b = msgp.AppendUint64(b, uint64(j.MaxSnoozes))
	} else {
		b = msgp.AppendNil(b)
	}
	if j.Print != nil {
		if j.UniqueForMs > 0 {
			b = msgp.AppendUint64(b, uint64(j.UniqueForMs))
			b = msgp.AppendNil(b) // replaces
			b = msgp.AppendNil(b) // replaced at
		}
		// Always the last field, so that a script reads it from the record's end.
		b = msgp.AppendStringFromBytes(b, j.Print)
	}
	return b
}

// appendHeaders encodes h as a map in the order of its names, so that the same job always
// encodes to the same bytes: enqueue tells a repeated call by comparing them.
func appendHeaders(b []byte, h map[string]string) []byte {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	b = msgp.AppendMapHeader(b, uint32(len(names)))
	for _, name := range names {
		b = msgp.AppendString(b, name)
		b = msgp.AppendString(b, h[name])
	}
	return b
}

// replyFields is the length of lib.lua's reply: id, record, state, lease, lease deadline.
const replyFields = 5

func parseRecords(vals []any) ([]Record, error) {
	out := make([]Record, len(vals))
	for i, v := range vals {
		r, err := parseRecord(v)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

func parseRecord(v any) (Record, error) {
	f, ok := v.([]any)
	if !ok || len(f) != replyFields {
		return Record{}, fmt.Errorf("delayq: malformed job reply %T (%d fields)", v, len(f))
	}
	r := Record{
		ID:              toString(f[0]),
		State:           int(toInt(f[2])),
		Lease:           toString(f[3]),
		LeaseDeadlineMs: toInt(f[4]),
	}
	if err := decodeRecord([]byte(toString(f[1])), &r); err != nil {
		return Record{}, fmt.Errorf("delayq: job %q: %w", r.ID, err)
	}
	if r.State == StateReserved {
		r.Attempts++ // the record counts finished attempts
	}
	return r, nil
}

// DecodeRecord reads a stored record, as a history stream entry carries it. Its state and lease
// fields are left zero: the record does not hold them.
func DecodeRecord(b []byte) (Record, error) {
	var r Record
	err := decodeRecord(b, &r)
	return r, err
}

// decodeRecord reads a stored record into r.
func decodeRecord(b []byte, r *Record) error {
	d := recordDecoder{b: b}
	r.Priority = int(d.int())
	r.Callback = d.str()
	r.TTRMs = d.int()
	r.Attempts = int(d.int())
	r.CreatedMs = d.int()
	r.RunAtMs = r.CreatedMs + d.int()
	r.Format = int(d.int())
	r.MaxRetries = int(d.int())
	r.Body = d.bytes()
	r.BackoffMs = d.ints()
	r.LastError = d.str()
	r.DiedMs = d.int()
	r.Headers = d.strmap()
	r.Snoozes = int(d.int())
	r.MaxSnoozes = int(d.int())
	if len(d.b) > PrintLen+1 {
		r.UniqueForMs = d.int()
		r.Replaces = int(d.int())
		r.ReplacedMs = d.int()
	}
	d.raw() // the fingerprint, which only the scripts read
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%d bytes after the last field", len(d.b))
	}
	return d.err
}

// recordDecoder reads a record's values in turn: a nil, or the end of the record, reads as the
// zero value; the first error sticks.
type recordDecoder struct {
	b   []byte
	err error
}

// absent consumes a nil and reports whether the next field has no value.
func (d *recordDecoder) absent() bool {
	if d.err != nil || len(d.b) == 0 {
		return true
	}
	if msgp.IsNil(d.b) {
		d.b = d.b[1:]
		return true
	}
	return false
}

func (d *recordDecoder) int() int64 {
	if d.absent() {
		return 0
	}
	var n int64
	n, d.b, d.err = msgp.ReadInt64Bytes(d.b)
	return n
}

func (d *recordDecoder) str() string { return string(d.raw()) }

// bytes returns a copy of a string field.
func (d *recordDecoder) bytes() []byte {
	b := d.raw()
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// raw returns a string field without copying it out of the record.
func (d *recordDecoder) raw() []byte {
	if d.absent() {
		return nil
	}
	var s []byte
	s, d.b, d.err = msgp.ReadStringZC(d.b)
	return s
}

func (d *recordDecoder) ints() []int64 {
	if d.absent() {
		return nil
	}
	var n uint32
	n, d.b, d.err = msgp.ReadArrayHeaderBytes(d.b)
	out := make([]int64, 0, n)
	for range n {
		if d.err != nil {
			return nil
		}
		var v int64
		v, d.b, d.err = msgp.ReadInt64Bytes(d.b)
		out = append(out, v)
	}
	return out
}

// strmap reads a map of strings; an empty one (which Lua would write as an empty array) reads
// as nil.
func (d *recordDecoder) strmap() map[string]string {
	if d.absent() {
		return nil
	}
	if msgp.NextType(d.b) == msgp.ArrayType {
		var n uint32
		if n, d.b, d.err = msgp.ReadArrayHeaderBytes(d.b); d.err == nil && n != 0 {
			d.err = fmt.Errorf("headers: an array of %d values, not a map", n)
		}
		return nil
	}
	var n uint32
	n, d.b, d.err = msgp.ReadMapHeaderBytes(d.b)
	if d.err != nil || n == 0 {
		return nil
	}
	out := make(map[string]string, n)
	for range n {
		var name, value []byte
		if name, d.b, d.err = msgp.ReadStringZC(d.b); d.err != nil {
			return nil
		}
		if value, d.b, d.err = msgp.ReadStringZC(d.b); d.err != nil {
			return nil
		}
		out[string(name)] = string(value)
	}
	return out
}

// toInt reads an integer reply; a missing field (Lua false, nil here) is 0.
func toInt(v any) int64 {
	n, _ := v.(int64)
	return n
}

func toString(v any) string {
	s, _ := v.(string)
	return s
}
