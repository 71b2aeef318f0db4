package faults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Kind names what an Event records.
type Kind string

// The kinds of events agents write. A producer writes Send before each enqueue call, then
// Enqueued for each job the call acknowledged or EnqueueErr for each it did not; one that
// sends a call again when its outcome is unknown writes Resend before each repeat, and
// ResendRefused when a repeat meets already_exists. A consumer writes Delivered when a
// handler receives a job, AckSent just before it calls Ack, and then Acked, AckRefused (the
// lease was lost) or AckErr (any other error); a canceller writes CancelSent, then Cancelled,
// CancelMissing or CancelErr.
const (
	Send          Kind = "send"
	Enqueued      Kind = "enqueued"
	EnqueueErr    Kind = "enqueue_err"
	Resend        Kind = "resend"
	ResendRefused Kind = "resend_refused"
	Delivered     Kind = "delivered"
	AckSent       Kind = "ack_sent"
	Acked         Kind = "acked"
	AckRefused    Kind = "ack_refused"
	AckErr        Kind = "ack_err"
	CancelSent    Kind = "cancel_sent"
	Cancelled     Kind = "cancelled"
	CancelMissing Kind = "cancel_missing"
	CancelErr     Kind = "cancel_err"
	// Warn is a warning the library logged inside the agent (a failed reserve, for instance):
	// an error that did not reach a caller but that a scenario may still count.
	Warn Kind = "warn"
	// HungUp is a reserve an HTTP consumer gave up on before its answer came (-hangup).
	HungUp Kind = "hung_up"
	// Start and Done mark the start and the orderly end of an agent.
	Start Kind = "start"
	Done  Kind = "done"
)

// Event is one line of an agent's log. Times are Unix milliseconds: T by the agent's own clock
// when it wrote the line, RunAt, Want and Reserved by the Redis server's clock as the library
// reported them.
type Event struct {
	T    int64  `json:"t"`
	Proc string `json:"proc"`
	Kind Kind   `json:"ev"`
	ID   string `json:"id,omitempty"`
	// IDs are the jobs of a Send, or of an EnqueueErr that failed a whole call.
	IDs []string `json:"ids,omitempty"`
	// RunAt is the job's due time: as Enqueued reported it, or as it was when Delivered.
	RunAt int64 `json:"run_at,omitempty"`
	// Want is the absolute due time a producer asked for (Spec.RunAt), when it gave one.
	Want int64 `json:"want,omitempty"`
	// Created is the job's creation time as an Enqueued answer reported it, when the
	// producer logs it.
	Created int64 `json:"created,omitempty"`
	// Reserved is when a delivery was leased: its lease deadline less its TTR.
	Reserved int64  `json:"reserved,omitempty"`
	Attempt  int    `json:"attempt,omitempty"`
	Lease    string `json:"lease,omitempty"`
	// Implicit marks a delivery that the server acks by itself when the receiver answers 2xx
	// (a webhook), so no ack events follow it.
	Implicit bool   `json:"implicit,omitempty"`
	Err      string `json:"err,omitempty"`
	// Bad says how a delivered job differs from what its producer sent; empty when it matches.
	Bad string `json:"bad,omitempty"`
}

// Log is an append-only event log. Each Write is one write(2) on a file opened with O_APPEND,
// so a line that Write returned for survives a kill -9 of the process (not a machine crash:
// there is no fsync). It is safe for concurrent use.
type Log struct {
	proc string
	mu   sync.Mutex
	f    *os.File
	err  error // the first write error, reported by Close
}

// OpenLog opens (creating it if needed) the log at path for the process named proc.
func OpenLog(path, proc string) (*Log, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("faults: open log: %w", err)
	}
	return &Log{proc: proc, f: f}, nil
}

// Write stamps e with the time and the process name and appends it as one line.
func (l *Log) Write(e Event) {
	e.T = time.Now().UnixMilli()
	e.Proc = l.proc
	b, err := json.Marshal(e)
	if err == nil {
		b = append(b, '\n')
		_, err = l.f.Write(b)
	}
	if err != nil {
		l.mu.Lock()
		if l.err == nil {
			l.err = fmt.Errorf("faults: write log: %w", err)
		}
		l.mu.Unlock()
	}
}

// Close closes the log and returns the first error any Write met.
func (l *Log) Close() error {
	cerr := l.f.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	return cerr
}

// ReadLogs reads every *.jsonl file in dir, in name order. A last line cut short by a kill is
// skipped; any other malformed line is an error.
func ReadLogs(dir string) ([]Event, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	var all []Event
	for _, p := range paths {
		evs, err := ReadLog(p)
		if err != nil {
			return nil, err
		}
		all = append(all, evs...)
	}
	return all, nil
}

// ReadLog reads one log file.
func ReadLog(path string) ([]Event, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("faults: read log: %w", err)
	}
	lines := bytes.Split(data, []byte("\n"))
	out := make([]Event, 0, len(lines))
	for i, line := range lines {
		if len(line) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			if i == len(lines)-1 {
				break // the process died in the middle of its last write
			}
			return nil, fmt.Errorf("faults: %s line %d: %w", path, i+1, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// JobID returns the id of job n of a producer with the given prefix.
func JobID(prefix string, n int) string { return prefix + "-" + strconv.Itoa(n) }

// Body returns the body a producer sends for job id: JSON that names the id, padded with a
// pattern derived from the id to pad bytes, so that a consumer can tell a whole body from a
// torn or misplaced one.
func Body(id string, pad int) []byte {
	return []byte(`{"id":` + strconv.Quote(id) + `,"pad":"` + padding(id, pad) + `"}`)
}

func padding(id string, n int) string {
	if n <= 0 {
		return ""
	}
	unit := fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte(id)))
	return strings.Repeat(unit, n/len(unit)+1)[:n]
}

// CheckBody reports how body differs from what Body(id, pad) would have made for some pad;
// nil when it is such a body.
func CheckBody(id string, body []byte) error {
	var v struct {
		ID  string `json:"id"`
		Pad string `json:"pad"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("body is not the JSON a producer sends: %w", err)
	}
	if v.ID != id {
		return fmt.Errorf("body names job %q", v.ID)
	}
	if !bytes.Equal(body, Body(id, len(v.Pad))) {
		return fmt.Errorf("body of %d bytes has a wrong padding", len(body))
	}
	return nil
}
