package cli_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// field returns the value of a "name  value" line of a field list.
func field(t *testing.T, out, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s+(.*)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no field %q in:\n%s", name, out)
	}
	return strings.TrimSpace(m[1])
}

// wantErr checks that err is the API error code, as the command line prints it.
func wantErr(t *testing.T, err error, code string) {
	t.Helper()
	if err == nil || !strings.HasPrefix(err.Error(), code+": ") {
		t.Fatalf("err = %v, want %q", err, code+": <message>")
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"--help"}, {"server", "--help"}, {"dead", "--help"}} {
		out, err := runCLI(t, nil, args...)
		if err != nil || !strings.Contains(out, "Usage:") {
			t.Errorf("delayq %v: err %v, output:\n%s", args, err, out)
		}
	}
	out, _ := runCLI(t, nil, "server", "--help")
	for _, name := range []string{"DELAYQ_LISTEN", "DELAYQ_REDIS", "DELAYQ_DATA_DIR", "DELAYQ_NAMESPACE", "DELAYQ_AUTH_TOKENS", "DELAYQ_WEBHOOK_SECRET", "DELAYQ_WEBHOOK_ALLOW_CIDRS", "DELAYQ_ALLOWED_HOSTS"} {
		if !strings.Contains(out, name) {
			t.Errorf("server --help does not name %s", name)
		}
	}
	if !strings.Contains(out, "the dashboard only: the API on the same port still takes every call") {
		t.Error("server --help does not say that --dashboard-read-only leaves the API as it is")
	}
	if _, err := runCLI(t, nil, "nosuchcommand"); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Errorf("unknown command: %v", err)
	}
}

func TestProduceCommands(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)

	out := s.must(t, "enqueue", "orders", "--id", "o-1", "--body", `{"order": 42}`, "--delay", "1h",
		"--ttr", "2m", "--max-retries", "3", "--max-snoozes", "4", "--backoff", "15s,3m,1h", "--priority", "7")
	for name, want := range map[string]string{
		"topic": "orders", "id": "o-1", "state": "delayed", "attempts": "0", "max_retries": "3",
		"snoozes": "0", "max_snoozes": "4",
		"ttr": "2m", "priority": "7", "backoff": "15s,3m,1h", "body": `{"order":42}`,
	} {
		if got := field(t, out, name); got != want {
			t.Errorf("enqueue: %s = %q, want %q", name, got, want)
		}
	}

	var j apiv1.Job
	s.mustJSON(t, &j, "get", "orders", "o-1")
	if j.ID != "o-1" || j.State != "delayed" || string(j.Body) != `{"order":42}` || j.TTRMs != 120000 || j.Priority != 7 {
		t.Errorf("get --json = %+v", j)
	}
	if d := time.Until(j.RunAt.Time); d < 59*time.Minute || d > time.Hour {
		t.Errorf("run_at %v is %v away, want 1h", j.RunAt, d)
	}

	// A binary body, an id the server makes, and an absolute due time.
	at := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Millisecond)
	s.mustJSON(t, &j, "enqueue", "orders", "--body-base64", "AAEC/w==", "--run-at", at.Format(time.RFC3339Nano))
	if j.ID == "" || j.BodyBase64 == nil || *j.BodyBase64 != "AAEC/w==" || !j.RunAt.Equal(at) {
		t.Errorf("enqueue --body-base64 --run-at: %+v", j)
	}
	// Server-made ids may start with "-": "--" ends the flags.
	out, err := runCLI(t, nil, "get", "--server", s.URL, "orders", "--", j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := field(t, out, "body"); got != "base64:AAEC/w==" {
		t.Errorf("get: body = %q", got)
	}

	// An id with characters that need escaping in a URL path.
	s.must(t, "enqueue", "orders", "--id", "a/b?c#d", "--body", `"text"`)
	if got := field(t, s.must(t, "get", "orders", "a/b?c#d"), "body"); got != `"text"` {
		t.Errorf("id with a slash: body = %q", got)
	}

	out = s.must(t, "reschedule", "orders", "o-1", "--delay", "0s")
	if got := field(t, out, "state"); got != "ready" {
		t.Errorf("reschedule --delay 0s: state = %q, want ready", got)
	}
	s.mustJSON(t, &j, "reschedule", "orders", "o-1", "--run-at", at.Format(time.RFC3339))
	if j.State != "delayed" || !j.RunAt.Equal(at.Truncate(time.Second)) {
		t.Errorf("reschedule --run-at: %+v", j)
	}

	out = s.must(t, "cancel", "orders", "o-1")
	if !strings.Contains(out, "cancelled orders/o-1") {
		t.Errorf("cancel printed %q", out)
	}
	if out := s.must(t, "cancel", "orders", "a/b?c#d", "--json"); out != "" {
		t.Errorf("cancel --json printed %q, want nothing", out)
	}
	_, err = s.run(t, "get", "orders", "o-1")
	wantErr(t, err, "not_found")
	// A cancel retried within the replay window answers as the first did.
	if out := s.must(t, "cancel", "orders", "o-1"); !strings.Contains(out, "cancelled orders/o-1") {
		t.Errorf("cancel retried printed %q", out)
	}
	_, err = s.run(t, "cancel", "orders", "never")
	wantErr(t, err, "not_found")
	if _, err := runCLI(t, nil, "get", "orders", "o-1", "--server", "127.0.0.1:7070"); err == nil || !strings.Contains(err.Error(), "--server") {
		t.Errorf("--server without a scheme: err = %v", err)
	}

	// Mistakes caught before a request, and by the server.
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"enqueue", "orders", "--body", "hello"}, "--body is not JSON"},
		{[]string{"enqueue", "orders", "--body-base64", "@@"}, "not standard base64"},
		{[]string{"enqueue", "orders", "--body", "1", "--body-base64", "AA=="}, "[body body-base64]"},
		{[]string{"enqueue", "orders", "--delay", "1s", "--run-at", "2026-01-01T00:00:00Z"}, "[delay run-at]"},
		{[]string{"enqueue", "orders", "--run-at", "tomorrow"}, "RFC 3339"},
		{[]string{"enqueue", "orders", "--backoff", "15s,soon"}, "--backoff"},
		{[]string{"enqueue", "orders", "--file", "x", "--id", "y"}, "[file id]"},
		{[]string{"enqueue"}, "accepts 1 arg"},
		{[]string{"enqueue", "orders", "--priority", "5000"}, "invalid_argument: "},
		{[]string{"enqueue", "bad topic!", "--body", "1"}, "invalid_argument: "},
		{[]string{"enqueue", "orders", "--id", "dup"}, ""},
		{[]string{"enqueue", "orders", "--id", "dup"}, ""}, // the same job again: safe to retry
		{[]string{"enqueue", "orders", "--id", "dup", "--body", "2"}, "already_exists: "},
		{[]string{"reschedule", "orders", "dup"}, "[delay run-at]"},
	} {
		_, err := s.run(t, tt.args...)
		if tt.want == "" {
			if err != nil {
				t.Errorf("delayq %s: %v", strings.Join(tt.args, " "), err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("delayq %s: err = %v, want one containing %q", strings.Join(tt.args, " "), err, tt.want)
		}
	}
}

func TestConsumeCommands(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	for i := 1; i <= 3; i++ {
		s.must(t, "enqueue", "mail", "--id", fmt.Sprint("m", i), "--body", fmt.Sprint(i), "--max-retries", "1", "--priority", fmt.Sprint(i))
	}

	// The table shows the leased jobs, highest priority first.
	out := s.must(t, "reserve", "mail", "--max", "2", "--ttr", "1m")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") || !strings.HasPrefix(lines[1], "m3 ") || !strings.HasPrefix(lines[2], "m2 ") {
		t.Fatalf("reserve table:\n%s", out)
	}
	leaseOf := func(line string) string { return strings.Fields(line)[4] }
	m3, m2 := leaseOf(lines[1]), leaseOf(lines[2])

	var res struct{ Jobs []*apiv1.Job }
	s.mustJSON(t, &res, "reserve", "mail", "--wait", "2s")
	if len(res.Jobs) != 1 || res.Jobs[0].ID != "m1" || res.Jobs[0].Lease == "" || res.Jobs[0].Attempts != 1 {
		t.Fatalf("reserve --json: %+v", res)
	}
	m1 := res.Jobs[0].Lease
	if out := s.must(t, "reserve", "mail", "--wait", "100ms"); !strings.Contains(out, "no job is due") {
		t.Errorf("reserve of an empty topic printed %q", out)
	}
	s.mustJSON(t, &res, "reserve", "mail")
	if res.Jobs == nil || len(res.Jobs) != 0 {
		t.Errorf("reserve --json of an empty topic: %+v, want an empty list", res)
	}

	var touched struct {
		LeaseDeadline apiv1.Time `json:"lease_deadline"`
	}
	s.mustJSON(t, &touched, "touch", "mail", "m3", "--lease", m3, "--ttr", "10m")
	if d := time.Until(touched.LeaseDeadline.Time); d < 9*time.Minute {
		t.Errorf("touch --ttr 10m: deadline %v away", d)
	}
	if out := s.must(t, "touch", "mail", "m3", "--lease", m3); !strings.Contains(out, "lease of mail/m3 runs until") {
		t.Errorf("touch printed %q", out)
	}

	if out := s.must(t, "ack", "mail", "m3", "--lease", m3); !strings.Contains(out, "acked mail/m3") {
		t.Errorf("ack printed %q", out)
	}
	// Retrying is safe: the same ack again answers as the first did.
	if out := s.must(t, "ack", "mail", "m3", "--lease", m3); !strings.Contains(out, "acked mail/m3") {
		t.Errorf("second ack printed %q", out)
	}
	_, err := s.run(t, "ack", "mail", "m2", "--lease", "made-up")
	wantErr(t, err, "lease_lost")
	if _, err := s.run(t, "ack", "mail", "m2"); err == nil || !strings.Contains(err.Error(), `"lease" not set`) {
		t.Errorf("ack without --lease: %v", err)
	}

	// A nack with a delay keeps the job, with its error; one without retries left kills it.
	if out := s.must(t, "nack", "mail", "m2", "--lease", m2, "--error", "smtp down", "--delay", "1h"); !strings.Contains(out, "nacked mail/m2") {
		t.Errorf("nack printed %q", out)
	}
	var j apiv1.Job
	s.mustJSON(t, &j, "get", "mail", "m2")
	if j.State != "delayed" || j.LastError != "smtp down" || time.Until(j.RunAt.Time) < 59*time.Minute {
		t.Errorf("after nack --delay 1h: %+v", j)
	}
	s.must(t, "nack", "mail", "m1", "--lease", m1, "--dead", "--error", "bad\naddress")
	s.mustJSON(t, &j, "get", "mail", "m1")
	if j.State != "dead" {
		t.Errorf("after nack --dead: state %s", j.State)
	}
}

// delayq reserve of a topic that does not exist warns on standard error, and its --json
// output says topic_exists false; the topic is not created.
func TestReserveWarnsOfATopicThatDoesNotExist(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	for _, args := range [][]string{{"reserve", "typo"}, {"reserve", "typo", "--wait", "50ms", "--json"}} {
		stdout, stderr, err := runCLIFull(t, nil, append(args, "--server", s.URL)...)
		if err != nil {
			t.Fatalf("delayq %s: %v", strings.Join(args, " "), err)
		}
		if !strings.Contains(stderr, `warning: topic "typo" does not exist`) {
			t.Errorf("delayq %s: standard error %q, want a warning that the topic does not exist", strings.Join(args, " "), stderr)
		}
		if args[len(args)-1] == "--json" && strings.TrimSpace(stdout) != `{"jobs":[],"topic_exists":false}` {
			t.Errorf("delayq %s printed %q", strings.Join(args, " "), stdout)
		}
	}
	if _, err := s.run(t, "stats", "typo"); err == nil || !strings.HasPrefix(err.Error(), "not_found: ") {
		t.Errorf("stats after reserving from a topic that does not exist: %v, want not_found", err)
	}
	s.must(t, "enqueue", "mail", "--id", "later", "--delay", "1h")
	if _, stderr, err := runCLIFull(t, nil, "reserve", "mail", "--server", s.URL); err != nil || stderr != "" {
		t.Errorf("reserve of an existing empty topic: standard error %q, %v; want none", stderr, err)
	}
}

func TestOperateCommands(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	if out := s.must(t, "topics"); !strings.Contains(out, "no topics") {
		t.Errorf("topics with none printed %q", out)
	}
	s.must(t, "enqueue", "later", "--body", "1", "--delay", "1h")
	for _, id := range []string{"d1", "d2", "d3"} {
		s.must(t, "enqueue", "jobs", "--id", id, "--max-retries", "0")
	}
	var res struct{ Jobs []*apiv1.Job }
	s.mustJSON(t, &res, "reserve", "jobs", "--max", "3")
	for _, j := range res.Jobs {
		s.must(t, "nack", "jobs", j.ID, "--lease", j.Lease, "--error", "failed "+j.ID)
	}

	out := s.must(t, "topics")
	want := regexp.MustCompile(`(?m)^TOPIC\s+DELAYED\s+READY\s+RESERVED\s+DEAD\s+NEXT_RUN_AT\n` +
		`jobs\s+0\s+0\s+0\s+3\s+-\n` +
		`later\s+1\s+0\s+0\s+0\s+\d{4}-`)
	if !want.MatchString(out) {
		t.Errorf("topics table:\n%s", out)
	}
	var topics struct{ Topics []apiv1.TopicStats }
	s.mustJSON(t, &topics, "topics")
	if len(topics.Topics) != 2 || topics.Topics[0].Name != "jobs" || topics.Topics[0].Dead != 3 || topics.Topics[1].NextRunAt == nil {
		t.Errorf("topics --json: %+v", topics)
	}

	out = s.must(t, "stats", "later")
	if field(t, out, "delayed") != "1" || field(t, out, "dead") != "0" || !strings.HasPrefix(field(t, out, "next_run_at"), "20") {
		t.Errorf("stats table:\n%s", out)
	}
	var st apiv1.TopicStats
	s.mustJSON(t, &st, "stats", "jobs")
	if st.Name != "jobs" || st.Dead != 3 || st.NextRunAt != nil {
		t.Errorf("stats --json: %+v", st)
	}
	_, err := s.run(t, "stats", "nosuchtopic")
	wantErr(t, err, "not_found")

	// Dead letters, a page at a time.
	out = s.must(t, "dead", "list", "jobs", "--limit", "2")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[1], "failed") || !strings.HasPrefix(lines[3], "more: delayq dead list jobs --cursor ") {
		t.Fatalf("dead list --limit 2:\n%s", out)
	}
	cursor := strings.Fields(lines[3])[6]
	var page apiv1.DeadPage
	s.mustJSON(t, &page, "dead", "list", "jobs", "--limit", "2", "--cursor", cursor)
	if len(page.Jobs) != 1 || page.NextCursor != "" || page.Jobs[0].State != "dead" {
		t.Errorf("second page: %+v", page)
	}
	s.mustJSON(t, &page, "dead", "list", "jobs")
	if len(page.Jobs) != 3 {
		t.Fatalf("dead list --json: %+v", page)
	}

	if out := s.must(t, "dead", "requeue", "jobs", "--id", "d1", "--id", "nope"); !strings.Contains(out, "requeued 1 dead job of jobs") {
		t.Errorf("dead requeue printed %q", out)
	}
	var n map[string]int
	idsFile := filepath.Join(t.TempDir(), "ids")
	if err := os.WriteFile(idsFile, []byte("d2\n\nnope\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.mustJSON(t, &n, "dead", "delete", "jobs", "--ids-from", idsFile)
	if n["deleted"] != 1 {
		t.Errorf("dead delete --json: %v", n)
	}
	s.mustJSON(t, &n, "dead", "requeue", "jobs", "--all")
	if n["requeued"] != 1 {
		t.Errorf("dead requeue --all --json: %v", n)
	}
	if out := s.must(t, "dead", "list", "jobs"); !strings.Contains(out, "no dead jobs") {
		t.Errorf("empty dead list printed %q", out)
	}
	s.mustJSON(t, &st, "stats", "jobs")
	if st.Ready != 2 || st.Dead != 0 {
		t.Errorf("after requeues: %+v", st)
	}
	if out := s.must(t, "dead", "delete", "jobs", "--all"); !strings.Contains(out, "deleted 0 dead jobs") {
		t.Errorf("dead delete --all printed %q", out)
	}
	if _, err := s.run(t, "dead", "delete", "jobs"); err == nil || !strings.Contains(err.Error(), "--id") {
		t.Errorf("dead delete without --id or --all: %v", err)
	}
}

// enqueue --unique-for keeps an ended job's id taken, and says so when the id comes again;
// --on-conflict keeps or replaces a job that exists, and the first line says which happened;
// get shows an ended job that keeps its id.
func TestEnqueueUniqueForAndOnConflict(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	firstLine := func(out string) string { return strings.SplitN(out, "\n", 2)[0] }

	out := s.must(t, "enqueue", "orders", "--id", "o-1", "--body", "1", "--delay", "1h", "--unique-for", "1h")
	if got := firstLine(out); got != "created orders/o-1" {
		t.Errorf("enqueue printed %q first, want created orders/o-1", got)
	}
	if got := field(t, out, "unique_for"); got != "1h" {
		t.Errorf("enqueue --unique-for 1h: unique_for = %q", got)
	}
	out = s.must(t, "enqueue", "orders", "--id", "o-1", "--body", "2", "--on-conflict", "keep")
	if got := firstLine(out); got != "kept orders/o-1 as it was: a job with this id exists" || field(t, out, "body") != "1" {
		t.Errorf("--on-conflict keep printed:\n%s", out)
	}
	out = s.must(t, "enqueue", "orders", "--id", "o-1", "--body", "3", "--delay", "2h", "--on-conflict", "replace", "--unique-for", "1h")
	if got := firstLine(out); got != "replaced orders/o-1 (replaced 1 time)" || field(t, out, "body") != "3" ||
		field(t, out, "replaces") != "1" || field(t, out, "replaced_at") == "" {
		t.Errorf("--on-conflict replace printed:\n%s", out)
	}
	var j apiv1.Job
	s.mustJSON(t, &j, "enqueue", "orders", "--id", "o-1", "--body", "4", "--on-conflict", "replace", "--unique-for", "1h")
	if j.Replaces != 2 || string(j.Body) != "4" || j.UniqueForMs != 3600000 {
		t.Errorf("--on-conflict replace --json: %+v", j)
	}
	_, err := s.run(t, "enqueue", "orders", "--id", "o-1", "--body", "5")
	wantErr(t, err, "already_exists")

	// Once the job has ended its id stays taken: an enqueue says how and when it ended, and get
	// shows it.
	s.must(t, "cancel", "orders", "o-1")
	for _, onConflict := range []string{"reject", "keep", "replace"} {
		_, err = s.run(t, "enqueue", "orders", "--id", "o-1", "--body", "6", "--on-conflict", onConflict)
		wantErr(t, err, "already_done")
		if !strings.Contains(err.Error(), "cancelled at ") {
			t.Errorf("--on-conflict %s of an ended id: %v, want it to say cancelled and when", onConflict, err)
		}
	}
	out = s.must(t, "get", "orders", "o-1")
	if field(t, out, "state") != "ended" || field(t, out, "outcome") != "cancelled" || field(t, out, "ended_at") == "" {
		t.Errorf("get of an ended id:\n%s", out)
	}
	var ended apiv1.EndedJob
	s.mustJSON(t, &ended, "get", "orders", "o-1")
	if ended.State != apiv1.StateEnded || ended.Outcome != "cancelled" || time.Since(ended.EndedAt.Time) > time.Minute {
		t.Errorf("get --json of an ended id: %+v", ended)
	}

	// --unique-for 0 keeps nothing.
	s.must(t, "enqueue", "orders", "--id", "o-2", "--unique-for", "0")
	s.must(t, "cancel", "orders", "o-2")
	_, err = s.run(t, "get", "orders", "o-2")
	wantErr(t, err, "not_found")

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"enqueue", "orders", "--id", "x", "--on-conflict", "merge"}, `--on-conflict "merge": want reject, keep or replace`},
		{[]string{"enqueue", "orders", "--id", "x", "--unique-for", "-1s"}, "--unique-for -1s must not be negative"},
		{[]string{"enqueue", "orders", "--id", "x", "--unique-for", "1500us"}, "whole number of milliseconds"},
		{[]string{"enqueue", "orders", "--unique-for", "1h"}, "invalid_argument: "},
		{[]string{"enqueue", "orders", "--on-conflict", "keep"}, "invalid_argument: "},
	} {
		if _, err := s.run(t, tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("delayq %s: err = %v, want one containing %q", strings.Join(tt.args, " "), err, tt.want)
		}
	}
}

// enqueue --file --unique-for --on-conflict: the flags apply to the lines with an id that do not
// say otherwise.
func TestEnqueueFileDefaults(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	s.must(t, "enqueue", "bulk", "--id", "f-1", "--body", "0", "--delay", "1h")
	s.must(t, "enqueue", "bulk", "--id", "f-2", "--body", "0", "--delay", "1h")
	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	lines := `{"id":"f-1","body":1}` + "\n" + // exists: kept
		`{"id":"f-2", "body": 2, "on_conflict": "reject"}` + "\n" + // exists, and says reject
		`{"body":3,"delay_ms":3600000}` + "\n" + // no id: sent as it is
		`{"id":"f-3","body":{"k": [1, 2]},"unique_for_ms":0}` + "\n" + // new, with its own unique_for
		`{"id":"f-4","delay_ms":3600000}` + "\n" // new
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := s.run(t, "enqueue", "bulk", "--file", path, "--on-conflict", "keep", "--unique-for", "1h")
	if err == nil || !strings.Contains(out, "added 3 jobs, 1 kept or replaced, 1 failed") || !strings.Contains(out, `line 2 (id "f-2"): already_exists: `) ||
		!strings.Contains(err.Error(), "1 of 5 jobs were not added") {
		t.Errorf("enqueue --file: %v\n%s", err, out)
	}
	for id, want := range map[string]struct {
		body      string
		uniqueFor int64
	}{
		"f-1": {"0", 0}, "f-2": {"0", 0}, "f-3": {`{"k":[1,2]}`, 0}, "f-4": {"", 3600000},
	} {
		var j apiv1.Job
		s.mustJSON(t, &j, "get", "bulk", id)
		if string(j.Body) != want.body || j.UniqueForMs != want.uniqueFor {
			t.Errorf("%s: body %s, unique_for_ms %d; want %s, %d", id, j.Body, j.UniqueForMs, want.body, want.uniqueFor)
		}
	}
}

func TestEnqueueFile(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	dir := t.TempDir()
	var b strings.Builder
	const total = 2500
	for i := 1; i <= total; i++ {
		switch i {
		case 17:
			b.WriteString("{not json\n")
		case 1800:
			b.WriteString(`{"id":"j1800","priority":5000}` + "\n")
		case 2000:
			b.WriteString("\n") // a blank line is skipped, not a job
		default:
			fmt.Fprintf(&b, `{"id":"j%d","body":{"n":%d},"delay_ms":3600000}`+"\n", i, i)
		}
	}
	path := filepath.Join(dir, "jobs.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runCLIFull(t, nil, "enqueue", "bulk", "--file", path, "--server", s.URL)
	if stderr != "" {
		t.Errorf("stderr is not a terminal, yet got %q", stderr)
	}
	if err == nil || err.Error() != "2 of 2499 jobs were not added" {
		t.Errorf("err = %v, want 2 of 2499 jobs were not added", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || lines[0] != "added 2497 jobs, 2 failed" ||
		!strings.HasPrefix(lines[1], "  line 17: invalid_argument: not valid JSON") ||
		!strings.HasPrefix(lines[2], `  line 1800 (id "j1800"): invalid_argument: `) || !strings.Contains(lines[2], "priority") {
		t.Errorf("summary:\n%s", out)
	}
	var st apiv1.TopicStats
	s.mustJSON(t, &st, "stats", "bulk")
	if st.Delayed != 2497 {
		t.Errorf("delayed = %d, want 2497", st.Delayed)
	}
	var j apiv1.Job
	s.mustJSON(t, &j, "get", "bulk", "j2500")
	if string(j.Body) != `{"n":2500}` {
		t.Errorf("j2500 body = %s", j.Body)
	}

	// Again with --json, and a file whose last line has no line end.
	small := filepath.Join(dir, "small.jsonl")
	if err := os.WriteFile(small, []byte(`{"id":"j1"}`+"\n"+`{"id":"new"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = s.run(t, "enqueue", "bulk", "--file", small, "--json")
	if err == nil {
		t.Error("a duplicate id did not fail the command")
	}
	if got, want := out, `{"added":1,"failed":[{"line":1,"id":"j1","error":{"code":"already_exists","message":`; !strings.HasPrefix(got, want) {
		t.Errorf("--json summary %s, want it to start with %s", got, want)
	}
	if _, err := s.run(t, "enqueue", "bulk", "--file", filepath.Join(dir, "missing.jsonl")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}

	// Failures in input order, whether the server or the command refused the line; plurals.
	mixed := filepath.Join(dir, "mixed.jsonl")
	if err := os.WriteFile(mixed, []byte(`{"id":"p","priority":5000}`+"\n{oops\n"+`{"id":"ok1"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = s.run(t, "enqueue", "bulk", "--file", mixed)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || lines[0] != "added 1 job, 2 failed" || !strings.HasPrefix(lines[1], `  line 1 (id "p"): `) ||
		!strings.HasPrefix(lines[2], "  line 2: ") || err == nil || err.Error() != "2 of 3 jobs were not added" {
		t.Errorf("mixed failures:\n%s\nerr %v", out, err)
	}
}

// Ids may contain commas: --id takes each whole.
func TestDeadIDsWithCommas(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	s.must(t, "enqueue", "c", "--id", "a,b", "--max-retries", "0")
	var res struct {
		Jobs []apiv1.Job `json:"jobs"`
	}
	s.mustJSON(t, &res, "reserve", "c")
	if len(res.Jobs) != 1 {
		t.Fatalf("reserve: %+v", res)
	}
	s.must(t, "nack", "c", "a,b", "--lease", res.Jobs[0].Lease)
	if out := s.must(t, "dead", "requeue", "c", "--id", "a,b"); !strings.Contains(out, "requeued 1 dead job of c") {
		t.Errorf("dead requeue --id a,b printed %q", out)
	}
}

// --server takes an address without a scheme; a refused connection says what was tried.
func TestServerAddress(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	bare := strings.TrimPrefix(s.URL, "http://")
	if _, err := runCLI(t, nil, "stats", "nothing", "--server", bare); err == nil || !strings.Contains(err.Error(), "not_found") {
		t.Errorf("--server %s: %v, want the server's not_found", bare, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	_, err = runCLI(t, nil, "stats", "x", "--server", closed)
	if err == nil || !strings.Contains(err.Error(), "http://"+closed) || !strings.Contains(err.Error(), "delayq server") {
		t.Errorf("a refused connection: %v, want the address tried and how to start a server", err)
	}
}

// release gives a job back without using an attempt; with --delay it snoozes it.
func TestReleaseCommandSnoozes(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	s.must(t, "enqueue", "pay", "--id", "p1", "--body", "1", "--max-snoozes", "1")
	var res struct{ Jobs []*apiv1.Job }
	s.mustJSON(t, &res, "reserve", "pay")
	if out := s.must(t, "release", "pay", "p1", "--lease", res.Jobs[0].Lease, "--delay", "1h"); !strings.Contains(out, "snoozed pay/p1") {
		t.Errorf("release --delay printed %q", out)
	}
	var j apiv1.Job
	s.mustJSON(t, &j, "get", "pay", "p1")
	if j.State != "delayed" || j.Snoozes != 1 || j.Attempts != 0 || time.Until(j.RunAt.Time) < 59*time.Minute {
		t.Errorf("after a snooze of 1h the job is %+v", j)
	}
	s.must(t, "enqueue", "pay", "--id", "p2", "--body", "2")
	s.mustJSON(t, &res, "reserve", "pay")
	if out := s.must(t, "release", "pay", "p2", "--lease", res.Jobs[0].Lease); !strings.Contains(out, "released pay/p2") {
		t.Errorf("release printed %q", out)
	}
	j = apiv1.Job{}
	s.mustJSON(t, &j, "get", "pay", "p2")
	if j.State != "ready" || j.Snoozes != 0 || j.Attempts != 0 {
		t.Errorf("after a release the job is %+v", j)
	}
}
