package faults

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Event builders for the checker's tests. Times are small numbers of ms.
func send(ids ...string) Event { return Event{Kind: Send, IDs: ids} }
func enq(id string, runAt int64) Event {
	return Event{Kind: Enqueued, ID: id, RunAt: runAt}
}
func deliver(id, lease string, attempt int, reserved, runAt int64) Event {
	return Event{Kind: Delivered, ID: id, Lease: lease, Attempt: attempt, Reserved: reserved, RunAt: runAt}
}
func ackSent(id, lease string, t int64) Event {
	return Event{Kind: AckSent, ID: id, Lease: lease, T: t}
}
func acked(id, lease string, t int64) Event { return Event{Kind: Acked, ID: id, Lease: lease, T: t} }

// counts keeps the fields of a Report that the tests compare.
type counts struct {
	Lost, Early, Stuck, StaleAccepted, AfterCancel, Phantom, Corrupt int
	Duplicates, InFlight, Unexplained, Finished, Dead, Remaining     int
	Resent, ResendsRefused                                           int
}

func countsOf(r *Report) counts {
	return counts{r.Lost, r.Early, r.Stuck, r.StaleAccepted, r.AfterCancel, r.Phantom, r.Corrupt,
		r.Duplicates, r.InFlight, r.Unexplained, r.Finished, r.Dead, r.Remaining,
		r.Resent, r.ResendsRefused}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	okJob := []Event{send("a"), enq("a", 100), deliver("a", "L1", 1, 100, 100), ackSent("a", "L1", 110), acked("a", "L1", 111)}
	tests := []struct {
		name    string
		events  []Event
		present map[string]string
		rules   Rules
		want    counts
		problem string // a substring of Problems(false); "" for none
	}{
		{name: "delivered and acked", events: okJob, want: counts{Finished: 1}},
		{
			name:    "acknowledged, never delivered, gone",
			events:  []Event{send("a"), enq("a", 100)},
			want:    counts{Lost: 1},
			problem: "lost = 1",
		},
		{
			name:    "delivered, killed before the ack went out, gone",
			events:  []Event{send("a"), enq("a", 100), deliver("a", "L1", 1, 100, 100)},
			want:    counts{Lost: 1},
			problem: "lost = 1",
		},
		{
			name:   "ack went out, answer lost, gone",
			events: []Event{send("a"), enq("a", 100), deliver("a", "L1", 1, 100, 100), ackSent("a", "L1", 110), {Kind: AckErr, ID: "a", Lease: "L1"}},
			want:   counts{Finished: 1},
		},
		{
			name:   "unconfirmed enqueue that never made it",
			events: []Event{send("a"), {Kind: EnqueueErr, IDs: []string{"a"}}},
		},
		{
			name: "resent after an unknown outcome, answered with the job",
			events: []Event{send("a"), {Kind: EnqueueErr, ID: "a"}, {Kind: Resend, ID: "a"}, enq("a", 100),
				deliver("a", "L1", 1, 100, 100), ackSent("a", "L1", 110), acked("a", "L1", 111)},
			want: counts{Finished: 1, Resent: 1},
		},
		{
			name: "resent after an unknown outcome, refused as already_exists",
			events: []Event{send("a"), {Kind: EnqueueErr, ID: "a"}, {Kind: Resend, ID: "a"}, {Kind: ResendRefused, ID: "a"},
				deliver("a", "L1", 1, 100, 100), ackSent("a", "L1", 110), acked("a", "L1", 111)},
			want:    counts{Finished: 1, Resent: 1, ResendsRefused: 1},
			problem: "resends refused = 1",
		},
		{
			name:   "cancelled before delivery",
			events: []Event{send("a"), enq("a", 100), {Kind: Cancelled, ID: "a", T: 50}},
		},
		{
			name:    "delivered after the cancel returned",
			events:  []Event{send("a"), enq("a", 100), {Kind: Cancelled, ID: "a", T: 50}, deliver("a", "L1", 1, 100, 100)},
			want:    counts{AfterCancel: 1},
			problem: "deliveries after cancel = 1",
		},
		{
			name:    "ack accepted after the cancel returned",
			events:  []Event{send("a"), enq("a", 100), deliver("a", "L1", 1, 100, 100), {Kind: Cancelled, ID: "a", T: 150}, ackSent("a", "L1", 160), acked("a", "L1", 161)},
			want:    counts{StaleAccepted: 1},
			problem: "stale acks accepted = 1",
		},
		{
			name:    "leased before its due time",
			events:  []Event{send("a"), enq("a", 100), deliver("a", "L1", 1, 99, 100), ackSent("a", "L1", 110), acked("a", "L1", 111)},
			want:    counts{Early: 1, Finished: 1},
			problem: "early = 1",
		},
		{
			name:    "first delivery before the due time the enqueue reported",
			events:  []Event{send("a"), enq("a", 200), deliver("a", "L1", 1, 150, 100), ackSent("a", "L1", 160), acked("a", "L1", 161)},
			want:    counts{Early: 1, Finished: 1},
			problem: "early = 1",
		},
		{
			name:    "still ready after the drain",
			events:  []Event{send("a"), enq("a", 100)},
			present: map[string]string{"a": "ready"},
			want:    counts{Stuck: 1},
			problem: "stuck = 1",
		},
		{
			name:    "allowed to remain",
			events:  []Event{send("a"), enq("a", 100)},
			present: map[string]string{"a": "delayed"},
			rules:   Rules{MayRemain: func(id string) bool { return id == "a" }},
			want:    counts{Remaining: 1},
		},
		{
			name:    "dead",
			events:  []Event{send("a"), enq("a", 100), deliver("a", "L1", 1, 100, 100)},
			present: map[string]string{"a": "dead"},
			want:    counts{Dead: 1},
		},
		{
			name:    "stored, but no producer sent it",
			present: map[string]string{"x": "ready"},
			want:    counts{Phantom: 1, Stuck: 1},
			problem: "phantom = 1",
		},
		{
			name:    "delivered, but no producer sent it",
			events:  []Event{deliver("x", "L1", 1, 100, 100), ackSent("x", "L1", 110), acked("x", "L1", 111)},
			want:    counts{Phantom: 1, Finished: 1},
			problem: "phantom = 1",
		},
		{
			name:    "torn body",
			events:  []Event{send("a"), enq("a", 100), {Kind: Delivered, ID: "a", Lease: "L1", Attempt: 1, Reserved: 100, RunAt: 100, Bad: "torn"}, ackSent("a", "L1", 110), acked("a", "L1", 111)},
			want:    counts{Corrupt: 1, Finished: 1},
			problem: "corrupt = 1",
		},
		{
			name: "redelivered without a fault",
			events: []Event{send("a"), enq("a", 100), deliver("a", "L1", 1, 100, 100),
				deliver("a", "L2", 2, 200, 150), ackSent("a", "L2", 210), acked("a", "L2", 211)},
			want:    counts{Duplicates: 1, Unexplained: 1, Finished: 1},
			problem: "unexplained duplicates = 1",
		},
		{
			name: "redelivered after a fault hit its first delivery",
			events: []Event{send("a"), enq("a", 100), deliver("a", "L1", 1, 100, 100),
				deliver("a", "L2", 2, 200, 150), ackSent("a", "L2", 210), acked("a", "L2", 211)},
			rules: Rules{Faults: []Window{{Start: 120, End: 130}}},
			want:  counts{Duplicates: 1, InFlight: 1, Finished: 1},
		},
		{
			name:   "acked before the fault: not in flight",
			events: okJob,
			rules:  Rules{Faults: []Window{{Start: 120, End: 130}}},
			want:   counts{Finished: 1},
		},
		{
			name: "late ack accepted after the job was redelivered",
			events: []Event{send("a"), enq("a", 100), deliver("a", "L1", 1, 100, 100),
				deliver("a", "L2", 2, 200, 150), ackSent("a", "L1", 210), acked("a", "L1", 211)},
			rules:   Rules{Faults: []Window{{Start: 120, End: 130}}},
			want:    counts{StaleAccepted: 1, Duplicates: 1, InFlight: 1, Finished: 1},
			problem: "stale acks accepted = 1",
		},
		{
			name: "late ack refused after the job was redelivered",
			events: []Event{send("a"), enq("a", 100), deliver("a", "L1", 1, 100, 100),
				deliver("a", "L2", 2, 200, 150), ackSent("a", "L1", 210), {Kind: AckRefused, ID: "a", Lease: "L1"},
				ackSent("a", "L2", 220), acked("a", "L2", 221)},
			rules: Rules{Faults: []Window{{Start: 120, End: 130}}},
			want:  counts{Duplicates: 1, InFlight: 1, Finished: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := Check(tt.events, tt.present, tt.rules)
			if diff := cmp.Diff(tt.want, countsOf(r)); diff != "" {
				t.Errorf("counts (-want +got):\n%s\nreport: %v", diff, r)
			}
			problems := strings.Join(r.Problems(false), "; ")
			switch {
			case tt.problem == "" && problems != "":
				t.Errorf("Problems() = %q, want none", problems)
			case tt.problem != "" && !strings.Contains(problems, tt.problem):
				t.Errorf("Problems() = %q, want it to contain %q", problems, tt.problem)
			}
		})
	}
}

func TestProblemsAllowLoss(t *testing.T) {
	t.Parallel()
	r := Check([]Event{send("a"), enq("a", 100)}, nil, Rules{})
	if p := r.Problems(true); len(p) != 0 {
		t.Errorf("Problems(true) = %q, want none", p)
	}
	if p := r.Problems(false); len(p) != 1 {
		t.Errorf("Problems(false) = %q, want the lost job", p)
	}
}

func TestLateness(t *testing.T) {
	t.Parallel()
	var evs []Event
	for i := range 100 {
		id := JobID("p", i)
		evs = append(evs, send(id), enq(id, 1000), deliver(id, "L", 1, 1000+int64(i), 1000),
			ackSent(id, "L", 2000), acked(id, "L", 2001))
	}
	r := Check(evs, nil, Rules{})
	if r.LateP50 != 50e6 || r.LateP99 != 99e6 || r.LateMax != 99e6 {
		t.Errorf("lateness p50 %v p99 %v max %v, want 50ms 99ms 99ms", r.LateP50, r.LateP99, r.LateMax)
	}
}

func TestBody(t *testing.T) {
	t.Parallel()
	for _, pad := range []int{0, 1, 7, 8, 1000} {
		b := Body("job-1", pad)
		if err := CheckBody("job-1", b); err != nil {
			t.Errorf("CheckBody(Body(pad %d)): %v", pad, err)
		}
	}
	bad := map[string][]byte{
		"other id": Body("job-2", 10),
		"torn":     Body("job-1", 100)[:50],
		"changed":  []byte(strings.Replace(string(Body("job-1", 100)), "a", "b", 1)),
		"empty":    nil,
	}
	for name, b := range bad {
		if err := CheckBody("job-1", b); err == nil {
			t.Errorf("CheckBody(%s) = nil, want an error", name)
		}
	}
}

func TestLogRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "a.jsonl")
	l, err := OpenLog(path, "a")
	if err != nil {
		t.Fatal(err)
	}
	l.Write(Event{Kind: Send, IDs: []string{"x", "y"}})
	l.Write(Event{Kind: Enqueued, ID: "x", RunAt: 5})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// A kill in the middle of a write leaves a torn last line, which is skipped.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"t":1,"proc":"a","ev":"deliv`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	evs, err := ReadLogs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		if e.Proc != "a" || e.T == 0 {
			t.Errorf("event %+v lacks its stamp", e)
		}
		got = append(got, string(e.Kind)+":"+e.ID)
	}
	if diff := cmp.Diff([]string{"send:", "enqueued:x"}, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// A malformed line in the middle is an error, not silently skipped.
	if err := os.WriteFile(path, []byte("{bad\n{\"ev\":\"send\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLogs(dir); err == nil {
		t.Error("ReadLogs of a malformed line: nil error")
	}
}
