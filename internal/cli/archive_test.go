package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/archive"
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
