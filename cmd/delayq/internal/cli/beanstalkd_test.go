package cli_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beanstalkd/go-beanstalk"
)

var beanstalkdRe = regexp.MustCompile(`beanstalkd protocol on ([^\s"]+)`)

// TestServerSpeaksBeanstalkd: with --beanstalkd-listen, a beanstalkd client and the HTTP API
// see the same jobs: a job put over beanstalkd is an ordinary job over HTTP, and a job enqueued
// over HTTP into a tube is reserved and deleted by a beanstalkd client under an integer id.
func TestServerSpeaksBeanstalkd(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil, "--beanstalkd-listen", "127.0.0.1:0")
	m := beanstalkdRe.FindStringSubmatch(s.logs.String())
	if m == nil {
		t.Fatalf("no beanstalkd address in the logs:\n%s", s.logs)
	}
	c, err := beanstalk.DialTimeout("tcp", m[1], 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	tube := beanstalk.NewTube(c, "mail")
	id, err := tube.Put([]byte("hello"), 10, time.Hour, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := s.must(t, "get", "mail", "0000000000000000000"+strconv.FormatUint(id, 10))
	if !strings.Contains(got, "base64:aGVsbG8=") || !strings.Contains(got, "delayed") ||
		!strings.Contains(got, "beanstalkd_priority  10") {
		t.Errorf("the put job over HTTP:\n%s", got)
	}

	s.must(t, "enqueue", "mail", "--id", "from-http", "--body", `"over http"`)
	watch := beanstalk.NewTubeSet(c, "mail")
	rid, body, err := watch.Reserve(5 * time.Second)
	if err != nil || string(body) != `"over http"` || rid == id {
		t.Fatalf("reserve = %d %q %v, want the job enqueued over HTTP under an id of its own", rid, body, err)
	}
	if got := s.must(t, "get", "mail", "from-http"); !strings.Contains(got, "reserved") {
		t.Errorf("the reserved job over HTTP:\n%s", got)
	}
	if err := c.Delete(rid); err != nil {
		t.Fatal(err)
	}
	if _, err := s.run(t, "get", "mail", "from-http"); err == nil || !strings.HasPrefix(err.Error(), "not_found: ") {
		t.Errorf("get after the beanstalkd delete: %v, want not_found", err)
	}
}
