package cli_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

func TestEnqueueHeaders(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	out := s.must(t, "enqueue", "orders", "--id", "h-1", "--header", "X-Tenant=acme", "--header", "traceparent=00-ab=cd")
	if got := field(t, out, "headers"); got != "traceparent: 00-ab=cd" {
		t.Errorf("enqueue: the first headers row is %q\n%s", got, out)
	}
	if !strings.Contains(out, "x-tenant: acme") {
		t.Errorf("enqueue printed no x-tenant header:\n%s", out)
	}
	var j apiv1.Job
	s.mustJSON(t, &j, "get", "orders", "h-1")
	if diff := cmp.Diff(map[string]string{"traceparent": "00-ab=cd", "x-tenant": "acme"}, j.Headers); diff != "" {
		t.Errorf("get --json headers (-want +got):\n%s", diff)
	}
	if got := field(t, s.must(t, "get", "orders", "h-1"), "headers"); got != "traceparent: 00-ab=cd" {
		t.Errorf("get: the first headers row is %q", got)
	}
	if out := s.must(t, "enqueue", "orders", "--id", "plain"); strings.Contains(out, "headers") {
		t.Errorf("a job without headers is printed with them:\n%s", out)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--header", "novalue"}, "want name=value"},
		{[]string{"--header", "=v"}, "want name=value"},
		{[]string{"--header", "a=1", "--header", "a=2"}, "given twice"},
		{[]string{"--header", "a b=1"}, "invalid_argument: invalid headers[a b]"},
		{[]string{"--header", "a=1", "--file", "x"}, "[file header]"},
	} {
		_, err := s.run(t, append([]string{"enqueue", "orders"}, tt.args...)...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("enqueue %s: err = %v, want one containing %q", strings.Join(tt.args, " "), err, tt.want)
		}
	}
}

func TestScheduleHeaders(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	out := s.must(t, "schedule", "put", "traced", "--cron", "@hourly", "--topic", "reports", "--header", "TraceState=a=1")
	if got := field(t, out, "headers"); got != "tracestate: a=1" {
		t.Errorf("schedule put: the headers row is %q\n%s", got, out)
	}
}
