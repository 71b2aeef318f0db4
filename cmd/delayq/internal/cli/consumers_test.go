package cli_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// examplesDir holds the consumer examples that docs/consumers.md quotes.
const examplesDir = "../../../../docs/examples"

// The examples of docs/consumers.md, run against a real server: the producers enqueue (the
// curl consumer's jobs come from the CLI), and each consumer acks the jobs that work, renews the
// lease of one that outlasts its TTR, and nacks the one that fails.
func TestConsumerExamples(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	examples := []struct {
		name     string
		tools    []string // on PATH; scripts/ensure-example-tools.sh installs them
		producer []string // nil: the jobs are enqueued with the CLI
		consumer []string
	}{
		{"python", []string{"python3"}, []string{"python3", "producer.py"}, []string{"python3", "consumer.py"}},
		{"node", []string{"node"}, []string{"node", "producer.mjs"}, []string{"node", "consumer.mjs"}},
		{"curl", []string{"bash", "curl", "jq"}, nil, []string{"bash", "consumer.sh"}},
	}
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			t.Parallel()
			for _, tool := range ex.tools {
				if _, err := exec.LookPath(tool); err != nil {
					t.Fatalf("%s is not on PATH: run `make test`, or bash scripts/ensure-example-tools.sh, which installs it", tool)
				}
			}
			topic := "consumers-" + ex.name
			env := []string{"DELAYQ_URL=" + s.URL, "DELAYQ_TOPIC=" + topic}
			// An id with characters that a URL path must escape.
			const oddID = "order/7?x#y%z,1"
			jobs := []string{
				`{"id": "order-1", "body": {"order": 1}}`,
				`{"id": "order/7?x#y%z,1", "body": {"order": 7}}`,
				// Work that outlasts the TTR: only lease renewal (touch) lets its ack through.
				`{"id": "slow", "body": {"work_ms": 6000}, "ttr_ms": 5000}`,
				`{"id": "bad", "body": {"fail": "card declined"}, "backoff_ms": [3600000]}`,
			}
			if ex.producer == nil {
				s.must(t, "enqueue", topic, "--id", "order-1", "--body", `{"order":1}`)
				s.must(t, "enqueue", topic, "--id", oddID, "--body", `{"order":7}`)
				s.must(t, "enqueue", topic, "--id", "slow", "--body", `{"work_ms":6000}`, "--ttr", "5s")
				s.must(t, "enqueue", topic, "--id", "bad", "--body", `{"fail":"card declined"}`, "--backoff", "1h")
			} else {
				out, _, err := runExample(t, env, append(ex.producer, jobs...)...)
				if err != nil || strings.Count(out, "enqueued ") != len(jobs) || !strings.Contains(out, "enqueued "+oddID+" ready run_at ") {
					t.Fatalf("producer: %v\n%s", err, out)
				}
				out, _, err = runExample(t, env, append(ex.producer, `{"id": "has space"}`)...)
				if err == nil || !strings.HasPrefix(out, "failed has space: invalid_argument ") {
					t.Errorf("producer of an invalid job: %v, output %q; want exit status 1 and the error", err, out)
				}
			}

			out, stderr, err := runExample(t, append(env, "DELAYQ_DRAIN=1"), ex.consumer...)
			if err != nil {
				t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(ex.consumer, " "), err, out, stderr)
			}
			defer func() {
				if t.Failed() {
					t.Logf("stdout:\n%s\nstderr:\n%s", out, stderr)
				}
			}()
			for _, line := range []string{"acked order-1", "acked " + oddID, "acked slow", "nacked bad: card declined", "touched slow lease until "} {
				if !strings.Contains(out, line) {
					t.Errorf("no %q line in the output", line)
				}
			}
			if strings.Contains(out, "lost ") {
				t.Errorf("a lease was lost")
			}
			for _, id := range []string{"order-1", oddID, "slow"} {
				if _, err := s.run(t, "get", topic, id); err == nil || !strings.HasPrefix(err.Error(), "not_found: ") {
					t.Errorf("job %q after the run: %v, want not_found (acked)", id, err)
				}
			}
			var bad apiv1.Job
			s.mustJSON(t, &bad, "get", topic, "bad")
			if bad.State != "delayed" || bad.Attempts != 1 || bad.LastError != "card declined" {
				t.Errorf("the failed job: state %s, attempts %d, last_error %q; want delayed, 1, \"card declined\"", bad.State, bad.Attempts, bad.LastError)
			}
		})
	}
}

// runExample runs an example of docs/examples with the test's environment and env.
func runExample(t *testing.T, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = examplesDir
	cmd.Env = append(cleanEnv(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// docs/consumers.md quotes each example whole, so that what readers copy is what the test runs.
func TestConsumersDocQuotesExamples(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../../../docs/consumers.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"producer.py", "producer.mjs", "consumer.py", "consumer.mjs", "consumer.sh"} {
		src, err := os.ReadFile(filepath.Join(examplesDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(doc, src) {
			t.Errorf("docs/consumers.md does not quote docs/examples/%s as it is", name)
		}
	}
}
