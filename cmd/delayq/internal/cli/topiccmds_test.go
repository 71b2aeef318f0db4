package cli_test

import (
	"strings"
	"testing"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

func TestTopicCommands(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	s.must(t, "enqueue", "sms", "--id", "a")
	s.must(t, "enqueue", "sms", "--id", "b")
	reserved := func() int {
		var res struct{ Jobs []*apiv1.Job }
		s.mustJSON(t, &res, "reserve", "sms", "--max", "2")
		return len(res.Jobs)
	}

	out := s.must(t, "topic", "pause", "sms")
	if field(t, out, "paused") != "true" || field(t, out, "partitions") != "1" || field(t, out, "rate_limit") != "-" {
		t.Errorf("topic pause:\n%s", out)
	}
	if n := reserved(); n != 0 {
		t.Fatalf("a paused topic handed out %d jobs", n)
	}
	if out := s.must(t, "topic", "resume", "sms"); field(t, out, "paused") != "false" {
		t.Errorf("topic resume:\n%s", out)
	}

	out = s.must(t, "topic", "limits", "sms", "--rate", "1", "--period", "1m", "--concurrency", "5")
	if field(t, out, "rate_limit") != "1 per 1m" || field(t, out, "concurrency_limit") != "5" {
		t.Errorf("topic limits:\n%s", out)
	}
	if n := reserved(); n != 1 {
		t.Fatalf("under a limit of 1 a minute a reserve got %d jobs", n)
	}
	if _, err := s.run(t, "topic", "limits", "sms"); err == nil || !strings.Contains(err.Error(), "--clear") {
		t.Errorf("topic limits without limits: %v", err)
	}
	_, err := s.run(t, "topic", "limits", "sms", "--rate", "5")
	wantErr(t, err, "invalid_argument")
	var st apiv1.TopicStats
	s.mustJSON(t, &st, "topic", "limits", "sms", "--clear")
	if st.Limits != (apiv1.TopicLimits{}) || st.Reserved != 1 {
		t.Errorf("topic limits --clear --json: %+v", st)
	}

	_, err = s.run(t, "topic", "delete", "sms")
	wantErr(t, err, "failed_precondition")
	if msg := err.Error(); !strings.Contains(msg, "--purge") || strings.Contains(msg, "?purge=true") {
		t.Errorf("topic delete of a topic with jobs: %q, want it to suggest --purge", msg)
	}
	if out := s.must(t, "topic", "delete", "sms", "--purge"); !strings.Contains(out, "deleted topic sms and 2 jobs") {
		t.Errorf("topic delete --purge printed %q", out)
	}
	_, err = s.run(t, "stats", "sms")
	wantErr(t, err, "not_found")
	s.must(t, "topic", "pause", "empty")
	var d apiv1.DeleteResponse
	s.mustJSON(t, &d, "topic", "delete", "empty")
	if d.Deleted != 0 {
		t.Errorf("topic delete --json of an empty topic: %+v", d)
	}
}

// topic defaults sets the unique_for that a topic's jobs take when they give none, and stats
// show it.
func TestTopicDefaultsCommand(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	if out := s.must(t, "topic", "defaults", "orders", "--unique-for", "2h"); field(t, out, "default_unique_for") != "2h" {
		t.Errorf("topic defaults --unique-for 2h:\n%s", out)
	}
	s.must(t, "enqueue", "orders", "--id", "a", "--delay", "1h")
	if got := field(t, s.must(t, "get", "orders", "a"), "unique_for"); got != "2h" {
		t.Errorf("a job of the topic: unique_for = %q, want the topic's 2h", got)
	}
	if out := s.must(t, "topic", "defaults", "orders", "--unique-for", "0"); field(t, out, "default_unique_for") != "none" {
		t.Errorf("topic defaults --unique-for 0:\n%s", out)
	}
	var st apiv1.TopicStats
	s.mustJSON(t, &st, "stats", "orders")
	if st.Defaults == nil || st.Defaults.UniqueForMs == nil || *st.Defaults.UniqueForMs != 0 {
		t.Errorf("stats --json after --unique-for 0: %+v", st.Defaults)
	}
	if out := s.must(t, "topic", "defaults", "orders", "--clear"); field(t, out, "default_unique_for") != "-" {
		t.Errorf("topic defaults --clear:\n%s", out)
	}
	if _, err := s.run(t, "topic", "defaults", "orders"); err == nil || !strings.Contains(err.Error(), "--clear") {
		t.Errorf("topic defaults without a default: %v", err)
	}
	if _, err := s.run(t, "topic", "defaults", "orders", "--unique-for", "1h", "--clear"); err == nil || !strings.Contains(err.Error(), "[unique-for clear]") {
		t.Errorf("topic defaults --unique-for --clear: %v", err)
	}
	_, err := s.run(t, "topic", "defaults", "orders", "--unique-for", "100000h")
	wantErr(t, err, "invalid_argument")
}
