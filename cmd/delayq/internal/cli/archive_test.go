package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/beanstalkd/go-beanstalk"

	"github.com/delayq/delayq/archive"
	"github.com/delayq/delayq/cmd/delayq/internal/cli"
	"github.com/delayq/delayq/internal/pgtest"
	"github.com/delayq/delayq/internal/testwait"
)

// With --archive the server archives every job's end into PostgreSQL, and its metrics say so.
func TestServerArchivesJobEnds(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t).NewDatabase(t)
	s := startServer(t, nil, "--archive", url)
	if strings.Contains(s.logs.String(), "password") {
		t.Fatalf("logs: %s", s.logs)
	}
	s.must(t, "enqueue", "orders", "--id", "o1", "--body", `{"n":1}`)
	var res struct {
		Jobs []struct{ Lease string } `json:"jobs"`
	}
	// The server turns archiving on before it listens.
	s.mustJSON(t, &res, "reserve", "orders")
	s.must(t, "ack", "orders", "o1", "--lease", res.Jobs[0].Lease)

	pg, err := archive.Open(context.Background(), url, archive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	testwait.ForNil(t, 20*time.Second, "o1 archived", func() error {
		page, err := pg.Query(context.Background(), archive.Filter{Topic: "orders", ID: "o1"})
		if err != nil {
			return err
		}
		if len(page.Outcomes) != 1 || page.Outcomes[0].Outcome != archive.Acked || string(page.Outcomes[0].Body) != `{"n":1}` {
			return fmt.Errorf("rows %+v", page.Outcomes)
		}
		return nil
	})
	// The API and the CLI read it back.
	var page struct {
		Entries []struct {
			Outcome string          `json:"outcome"`
			Body    json.RawMessage `json:"body"`
		} `json:"entries"`
	}
	s.mustJSON(t, &page, "history", "orders", "o1")
	if len(page.Entries) != 1 || page.Entries[0].Outcome != "acked" || string(page.Entries[0].Body) != `{"n":1}` {
		t.Fatalf("delayq history orders o1: %+v", page)
	}
	// The row is in PostgreSQL before the archiver counts it and deletes it from Redis.
	testwait.ForNil(t, 20*time.Second, "the archive's metrics", func() error {
		resp, err := http.Get(s.URL + "/metrics")
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, want := range []string{"delayq_archived_total 1", "delayq_archive_waiting 0", "delayq_archive_dropped_total 0"} {
			if !strings.Contains(string(body), want) {
				return fmt.Errorf("/metrics lacks %q", want)
			}
		}
		return nil
	})
}

func TestServerRefusesABadArchiveURL(t *testing.T) {
	t.Parallel()
	_, err := runCLI(t, nil, "server", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--archive", "mysql://x")
	if err == nil || !strings.Contains(err.Error(), "--archive") {
		t.Fatalf("server --archive mysql://x: %v", err)
	}
}

// A PostgreSQL address that takes connections and never answers (a hung server, or a proxy
// in front of none): the server gives up with a clear error instead of hanging at start, and
// the error holds no password.
func TestServerGivesUpOnASilentArchive(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	var out, errOut bytes.Buffer
	err = cli.Run(ctx, []string{"server", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(),
		"--archive", "postgres://delayq:s3cret-pw@" + ln.Addr().String() + "/history"},
		getenv(nil), &out, &errOut)
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "--archive") {
		t.Fatalf("server = %v after %v; want an --archive error", err, took)
	}
	if took > 30*time.Second {
		t.Errorf("the server gave up after %v", took)
	}
	if s := err.Error() + out.String() + errOut.String(); strings.Contains(s, "s3cret-pw") {
		t.Errorf("the password leaked: %s", s)
	}
}

// A password given as a parameter of the archive URL (?password=) stays out of the error and
// the logs as one in the user part does.
func TestServerHidesAnArchivePasswordParameter(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there: the connection is refused
	var out, errOut bytes.Buffer
	err = cli.Run(context.Background(), []string{"server", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(),
		"--archive", "postgres://delayq@" + addr + "/history?sslmode=disable&password=s3cret-pw"},
		getenv(nil), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "--archive") {
		t.Fatalf("server = %v; want an --archive error", err)
	}
	if s := err.Error() + out.String() + errOut.String(); strings.Contains(s, "s3cret-pw") {
		t.Errorf("the password leaked: %s", s)
	}
}

// With --archive and --beanstalkd-listen, the ends of jobs put over the beanstalkd protocol
// reach the history with their beanstalkd priority, which the API and the CLI show as they
// show a job's.
func TestServerArchivesBeanstalkdJobs(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t).NewDatabase(t)
	s := startServer(t, nil, "--archive", url, "--beanstalkd-listen", "127.0.0.1:0")
	m := beanstalkdRe.FindStringSubmatch(s.logs.String())
	if m == nil {
		t.Fatalf("no beanstalkd address in the logs:\n%s", s.logs)
	}
	c, err := beanstalk.DialTimeout("tcp", m[1], 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	const pri = 1<<32 - 1
	tube := beanstalk.NewTube(c, "mail")
	if _, err := tube.Put([]byte("hello \xff"), pri, 0, time.Minute); err != nil {
		t.Fatal(err)
	}
	id, body, err := beanstalk.NewTubeSet(c, "mail").Reserve(5 * time.Second)
	if err != nil || string(body) != "hello \xff" {
		t.Fatalf("reserve = %d %q %v", id, body, err)
	}
	if err := c.Delete(id); err != nil {
		t.Fatal(err)
	}

	jobID := fmt.Sprintf("%020d", id)
	var page struct {
		Entries []map[string]any `json:"entries"`
	}
	testwait.ForNil(t, 20*time.Second, "the job archived", func() error {
		out, err := s.run(t, "history", "mail", jobID, "--json")
		if err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(out), &page); err != nil {
			return err
		}
		if len(page.Entries) != 1 {
			return fmt.Errorf("%d entries", len(page.Entries))
		}
		return nil
	})
	e := page.Entries[0]
	// JSON numbers decode as float64, which holds 2^32-1 exactly.
	if e["outcome"] != "acked" || e["priority"] != 0.0 || e["beanstalkd_priority"] != float64(pri) ||
		e["ttr_ms"] != 60000.0 || e["body_base64"] != "aGVsbG8g/w==" {
		t.Errorf("the history of the job put over beanstalkd: %v", e)
	}
	if out := s.must(t, "history", "--topic", "mail"); !strings.Contains(out, "mail/"+jobID+"  acked") {
		t.Errorf("delayq history --topic mail:\n%s", out)
	}
}
