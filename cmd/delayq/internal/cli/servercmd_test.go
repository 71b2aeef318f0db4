package cli_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/apiclient"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
	"github.com/delayq/delayq/cmd/delayq/internal/certtest"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

func TestRestartKeepsJobs(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	s.must(t, "enqueue", "orders", "--id", "kept", "--body", `{"v":1}`, "--delay", "1h")
	pid := s.redisPid(t)
	if err := s.Stop(t); err != nil {
		t.Fatalf("Run returned %v after the context was cancelled, want nil", err)
	}
	if alive(pid) {
		t.Fatalf("embedded redis-server %d still runs after the server stopped", pid)
	}
	if !strings.Contains(s.logs.String(), "shutting down") || !strings.Contains(s.logs.String(), "embedded redis-server stopped") {
		t.Errorf("shutdown not logged:\n%s", s.logs)
	}

	again := startServerArgs(t, nil, s.Dir, "server", "--listen", "127.0.0.1:0", "--data-dir", s.Dir)
	var j apiv1.Job
	again.mustJSON(t, &j, "get", "orders", "kept")
	if j.State != "delayed" || string(j.Body) != `{"v":1}` {
		t.Errorf("after the restart: %+v", j)
	}
}

func TestEmbeddedRedisKilled(t *testing.T) {
	t.Parallel()
	// appendfsync always: each acknowledged enqueue is on disk before the kill.
	s := startServer(t, nil, "--redis-appendfsync", "always")
	s.must(t, "enqueue", "orders", "--id", "before-kill", "--body", "1", "--delay", "1h")
	old := s.redisPid(t)
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 15*time.Second, "the supervisor restarts redis-server", func() bool {
		return strings.Contains(s.logs.String(), "embedded redis-server restarted")
	})
	if pid := s.redisPid(t); pid == old {
		t.Errorf("redis-server pid is still %d after the restart", pid)
	}
	var j apiv1.Job
	testwait.For(t, 10*time.Second, "the job is readable again", func() bool {
		out, err := s.run(t, "get", "orders", "before-kill", "--json")
		return err == nil && json.Unmarshal([]byte(out), &j) == nil
	})
	if j.State != "delayed" {
		t.Errorf("job after the restart: %+v", j)
	}
	s.must(t, "enqueue", "orders", "--id", "after-kill")
}

func TestExternalRedis(t *testing.T) {
	t.Parallel()
	rs := redistest.Standalone(t)
	s := startServer(t, nil, "--redis", "redis://"+rs.Addr+"/2", "--namespace", "ext")
	if strings.Contains(s.logs.String(), "embedded redis-server") {
		t.Errorf("an embedded redis-server started although --redis was given:\n%s", s.logs)
	}
	if _, err := os.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the data directory was created although --redis was given: %v", err)
	}
	s.must(t, "enqueue", "orders", "--id", "x", "--body", "1")
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr, DB: 2})
	defer rdb.Close()
	keys, err := rdb.Keys(context.Background(), "ext:*").Result()
	if err != nil || len(keys) == 0 {
		t.Errorf("no ext:* keys in database 2: %v, %v", keys, err)
	}
	// Replays are on by default: the enqueue recorded its outcome.
	if calls, err := rdb.Keys(context.Background(), "ext:*:call:*").Result(); err != nil || len(calls) == 0 {
		t.Errorf("no call records in database 2 with the default replay window: %v, %v", calls, err)
	}
	// The server's default is the library's: one partition on a standalone Redis, so that
	// priority order is exact.
	if n, err := rdb.HGet(context.Background(), "ext:topics", "orders").Result(); err != nil || n != "1" {
		t.Errorf("a new topic has %q partitions (%v), want 1", n, err)
	}
}

// --replay-window 0 (here from its environment variable) turns replays off: no state change
// records its outcome, and no ended job leaves a marker.
func TestReplayWindowOff(t *testing.T) {
	t.Parallel()
	rs := redistest.Standalone(t)
	s := startServer(t, map[string]string{"DELAYQ_REPLAY_WINDOW": "0"}, "--redis", "redis://"+rs.Addr, "--namespace", "off")
	s.must(t, "enqueue", "orders", "--id", "x", "--body", "1")
	s.must(t, "cancel", "orders", "x")
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rdb.Close()
	keys, err := rdb.Keys(context.Background(), "off:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.Contains(k, ":call:") || strings.Contains(k, ":ended:") {
			t.Errorf("key %s written with --replay-window 0", k)
		}
	}
}

// --unique-for (here from its environment variable) keeps the ids of ended jobs taken, even
// with replays off.
func TestServerUniqueForKeepsEndedIDsTaken(t *testing.T) {
	t.Parallel()
	rs := redistest.Standalone(t)
	s := startServer(t, map[string]string{"DELAYQ_UNIQUE_FOR": "1h", "DELAYQ_REPLAY_WINDOW": "0"}, "--redis", "redis://"+rs.Addr)
	s.must(t, "enqueue", "orders", "--id", "x", "--body", "1")
	s.must(t, "cancel", "orders", "x")
	if out, err := s.run(t, "enqueue", "orders", "--id", "x", "--body", "2"); err == nil || !strings.Contains(err.Error(), "already_done") {
		t.Errorf("an enqueue of a cancelled job's id = %v:\n%s\nwant already_done", err, out)
	}
}

// --unique-for (here from its environment variable) keeps the ids of ended jobs taken when
// neither the job nor its topic says otherwise.
func TestServerUniqueForDefault(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"DELAYQ_UNIQUE_FOR": "1h"})
	s.must(t, "enqueue", "orders", "--id", "o-1", "--body", "1")
	s.must(t, "cancel", "orders", "o-1")
	_, err := s.run(t, "enqueue", "orders", "--id", "o-1", "--body", "2")
	wantErr(t, err, "already_done")
	if !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("an enqueue of the id of a cancelled job: %v, want it to say cancelled", err)
	}
	// Without a default, the id is free once the job ends (and its replay window is past:
	// another body is not a repeat).
	plain := startServer(t, nil)
	plain.must(t, "enqueue", "orders", "--id", "o-1", "--body", "1")
	plain.must(t, "cancel", "orders", "o-1")
	plain.must(t, "enqueue", "orders", "--id", "o-1", "--body", "2")
}

func TestShutdownEndsLongPolls(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil, "--shutdown-timeout", "20s")
	c, err := apiclient.New(apiclient.Config{BaseURL: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	polled := make(chan error, 1)
	wrote := make(chan struct{})
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { close(wrote) },
	})
	go func() {
		_, err := c.Reserve(ctx, "idle", apiclient.ReserveRequest{Wait: 60 * time.Second})
		polled <- err
	}()
	// The server has the reserve: it waits for a job in a topic nobody has used.
	select {
	case <-wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("the reserve request was not sent in 10s")
	}
	start := time.Now()
	if err := s.Stop(t); err != nil {
		t.Fatalf("Run returned %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("shutdown took %v with a 60s long poll in flight, want it ended early", d)
	}
	select {
	case err := <-polled:
		if err == nil {
			t.Log("the long poll ended with no jobs")
		} else {
			t.Logf("the long poll ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the long poll still waits after the shutdown")
	}
}

func TestWebhookPush(t *testing.T) {
	t.Parallel()
	var got atomic.Value
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("webhook-signature") != "" {
			got.Store(string(body))
		}
	}))
	t.Cleanup(hook.Close)
	s := startServer(t, nil,
		"--webhook-secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		"--webhook-allow-cidr", "127.0.0.0/8")
	if !strings.Contains(s.logs.String(), "webhooks=true") {
		t.Errorf("webhooks not reported on:\n%s", s.logs)
	}
	s.must(t, "enqueue", "hooks", "--id", "h1", "--body", `{"push":true}`, "--callback-url", hook.URL+"/cb")
	testwait.For(t, 15*time.Second, "the webhook is delivered", func() bool { return got.Load() != nil })
	if body := got.Load().(string); !strings.Contains(body, `"id":"h1"`) || !strings.Contains(body, `{"push":true}`) {
		t.Errorf("webhook body %s", body)
	}
	testwait.For(t, 10*time.Second, "the delivered job is acked", func() bool {
		_, err := s.run(t, "get", "hooks", "h1")
		return err != nil && strings.HasPrefix(err.Error(), "not_found: ")
	})
}

func TestCallbacksRefusedWithoutSecret(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	_, err := s.run(t, "enqueue", "hooks", "--callback-url", "https://example.com/cb")
	wantErr(t, err, "invalid_argument")
}

// A server without tokens answers its loopback names and the names it is given, from
// --allowed-host or $DELAYQ_ALLOWED_HOSTS, and refuses others naming the flag.
func TestServerAnswersOnlyItsHostNames(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]*server{
		"flag": startServer(t, nil, "--allowed-host", "queue.internal", "--allowed-host", "other.internal"),
		"env":  startServer(t, map[string]string{"DELAYQ_ALLOWED_HOSTS": "queue.internal, other.internal"}),
	} {
		for host, want := range map[string]int{"evil.example": 403, "queue.internal": 200, "other.internal:7070": 200, "localhost": 200, "": 200} {
			body, status := httpGetHost(t, s.URL+"/v1/topics", host)
			if status != want {
				t.Errorf("%s: Host %q: %d, want %d: %s", name, host, status, want, body)
			}
			if status == 403 && !strings.Contains(body, "--allowed-host evil.example") {
				t.Errorf("%s: the refusal does not name the flag: %s", name, body)
			}
		}
	}
}

func httpGetHost(t *testing.T, url, host string) (string, int) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode
}

func httpGet(t *testing.T, url string) (string, int) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode
}

func TestFlagsOverrideEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"DELAYQ_LISTEN":      "127.0.0.1:0",
		"DELAYQ_NAMESPACE":   "from-env",
		"DELAYQ_AUTH_TOKENS": "tok-a-0123456789ab, tok-b-0123456789ab",
		"DELAYQ_LOG_FORMAT":  "json",
	}
	dir := t.TempDir()
	// The environment alone: its namespace, its tokens, JSON logs.
	s := startServerArgs(t, env, dir, "server", "--data-dir", dir)
	if !strings.Contains(s.logs.String(), `"namespace":"from-env"`) {
		t.Errorf("namespace from the environment not used:\n%s", s.logs)
	}
	_, err := s.run(t, "topics")
	wantErr(t, err, "unauthenticated")
	s.must(t, "topics", "--token", "tok-b-0123456789ab")
	if _, err := runCLI(t, map[string]string{"DELAYQ_SERVER": s.URL, "DELAYQ_TOKEN": "tok-a-0123456789ab"}, "topics"); err != nil {
		t.Errorf("client configured by DELAYQ_SERVER and DELAYQ_TOKEN: %v", err)
	}
	if _, err := runCLI(t, map[string]string{"DELAYQ_SERVER": s.URL, "DELAYQ_TOKEN": "tok-a-0123456789ab"}, "topics", "--token", "wrong"); err == nil {
		t.Error("--token did not override DELAYQ_TOKEN")
	}

	// Flags win over the environment.
	dir2 := t.TempDir()
	s2 := startServerArgs(t, env, dir2, "server", "--data-dir", dir2, "--namespace", "from-flag", "--auth-token", "tok-c-0123456789ab", "--log-format", "text")
	if !strings.Contains(s2.logs.String(), "namespace=from-flag") {
		t.Errorf("--namespace did not override DELAYQ_NAMESPACE:\n%s", s2.logs)
	}
	_, err = s2.run(t, "topics", "--token", "tok-a-0123456789ab")
	wantErr(t, err, "unauthenticated")
	s2.must(t, "topics", "--token", "tok-c-0123456789ab")
}

func TestServerConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"missing redis-server", nil, []string{"--redis-server", "/nonexistent/redis-server"},
			"redis-server not found: install it (Debian/Ubuntu: sudo apt-get install -y redis-server) or pass --redis redis://host:6379"},
		{"bad redis url", nil, []string{"--redis", "http://localhost:6379"}, `--redis: invalid Redis URL: unknown scheme "http"`},
		{"bad redis url from env", map[string]string{"DELAYQ_REDIS": "redis://h:notaport"}, nil, "--redis: invalid Redis URL"},
		{"unreachable redis", nil, []string{"--redis", "redis://127.0.0.1:1"}, "connecting to Redis at redis://127.0.0.1:1"},
		{"secret without prefix", nil, []string{"--webhook-secret", "c2VjcmV0"}, `--webhook-secret: must start with "whsec_"`},
		{"secret from env without prefix", map[string]string{"DELAYQ_WEBHOOK_SECRET": "nope"}, nil, `--webhook-secret: must start with "whsec_"`},
		{"short secret", nil, []string{"--webhook-secret", "whsec_c2VjcmV0"}, "24 to 64 bytes"},
		{"bad cidr", nil, []string{"--webhook-allow-cidr", "localhost"}, `--webhook-allow-cidr: "localhost" is not a CIDR`},
		{"bad cidr from env", map[string]string{"DELAYQ_WEBHOOK_ALLOW_CIDRS": "10.0.0.0/8,nope"}, nil, `"nope" is not a CIDR`},
		{"bad log format", nil, []string{"--log-format", "xml"}, "--log-format"},
		{"bad partitions", nil, []string{"--partitions", "-1"}, "--partitions -1"},
		{"bad partitions from env", map[string]string{"DELAYQ_PARTITIONS": "many"}, nil, "environment variable DELAYQ_PARTITIONS"},
		{"empty token", nil, []string{"--auth-token", ""}, "--auth-token"},
		{"allowed host with a scheme", nil, []string{"--allowed-host", "http://queue.internal"}, `--allowed-host: allowed host "http://queue.internal": want a host name`},
		{"allowed host with a port from env", map[string]string{"DELAYQ_ALLOWED_HOSTS": "a.internal, b.internal:7070"}, nil, `allowed host "b.internal:7070"`},
		{"tls cert without key", nil, []string{"--tls-cert", "cert.pem"}, "--tls-cert and --tls-key: give both, or neither"},
		{"tls files missing", map[string]string{"DELAYQ_TLS_CERT": "/nonexistent/c.pem", "DELAYQ_TLS_KEY": "/nonexistent/k.pem"}, nil, "--tls-cert, --tls-key: TLS: stat /nonexistent/c.pem"},
		{"no tokens file", nil, []string{"--auth-tokens-file", "/nonexistent/tokens.json"}, "--auth-tokens-file: open /nonexistent/tokens.json"},
		{"bad tokens file from env", map[string]string{"DELAYQ_AUTH_TOKENS_FILE": writeFile(t, `{"tokens": [{"name": "a", "token": "short", "role": "admin"}]}`)}, nil,
			`token 1 ("a"): token: a token of 5 bytes is too short`},
		{"short token", nil, []string{"--auth-token", "0123456789abcde"}, "--auth-token (token 1 of 1): a token of 15 bytes is too short: want at least 16"},
		{"short token from env", map[string]string{"DELAYQ_AUTH_TOKENS": "long-enough-token-0001,x"}, nil, "--auth-token (token 2 of 2): a token of 1 bytes is too short"},
		{"negative replay window", nil, []string{"--replay-window", "-1s"}, "--replay-window -1s: want a duration, or 0 for none"},
		{"negative unique for", nil, []string{"--unique-for", "-1s"}, "--unique-for -1s: want a duration, or 0 for none"},
		{"bad listen", nil, []string{"--listen", "256.0.0.1:99999"}, "--listen 256.0.0.1:99999"},
		{"unknown flag", nil, []string{"--bogus"}, "unknown flag: --bogus"},
		{"arguments", nil, []string{"extra"}, `unknown command "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"server", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()}, tt.args...)
			done := make(chan error, 1)
			var logs testwait.Buffer
			go func() { done <- runServerOnce(tt.env, args, &logs) }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("err = %v, want one containing %q", err, tt.want)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("the server started instead of failing; logs:\n%s", logs.String())
			}
			for _, pid := range (&server{logs: &logs}).redisPids() {
				if alive(pid) {
					t.Errorf("a failed start left redis-server %d running", pid)
				}
			}
		})
	}
}

func TestDataDirInUse(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	var logs testwait.Buffer
	err := runServerOnce(nil, []string{"server", "--listen", "127.0.0.1:0", "--data-dir", s.Dir}, &logs)
	if err == nil || !strings.Contains(err.Error(), "used by another delayq server") {
		t.Errorf("second server on one data dir: err = %v", err)
	}
	s.must(t, "topics")
}

// The server expires the leases of every topic at their deadlines, also of a topic it never
// served a consumer of: a job leased by a program that then went away reads as moved on over
// HTTP, and the topic's stats count the expiry.
func TestServerExpiresLeasesOfTopicsNobodyConsumes(t *testing.T) {
	t.Parallel()
	rs := redistest.Standalone(t)
	s := startServer(t, nil, "--redis", "redis://"+rs.Addr, "--namespace", "lx")
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rdb.Close()
	ctx := context.Background()
	c, err := delayq.New(ctx, rdb, delayq.Config{Namespace: "lx", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, "gone", delayq.Spec{ID: "a", TTR: 300 * time.Millisecond, Backoff: []time.Duration{time.Hour}}); err != nil {
		t.Fatal(err)
	}
	jobs, err := c.Reserve(ctx, "gone", delayq.ReserveOptions{})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Reserve: %d jobs, %v", len(jobs), err)
	}
	c.Close() // the only consumer is gone
	deadline := jobs[0].LeaseDeadline

	var job apiv1.Job
	testwait.For(t, 10*time.Second, "the job to be no longer reserved", func() bool {
		body, code := httpGet(t, s.URL+"/v1/topics/gone/jobs/a")
		if code != http.StatusOK {
			t.Fatalf("GET the job: %d %s", code, body)
		}
		if err := json.Unmarshal([]byte(body), &job); err != nil {
			t.Fatal(err)
		}
		return job.State != "reserved"
	})
	if late := time.Since(deadline); late > 2*time.Second {
		t.Fatalf("the lease expired %v after its deadline; want within 2s", late)
	}
	if job.State != "delayed" || job.LastError != "ttr exceeded" {
		t.Fatalf("job after its lease expired: %+v; want delayed, ttr exceeded", job)
	}
	body, _ := httpGet(t, s.URL+"/v1/topics/gone")
	var st apiv1.TopicStats
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.Reserved != 0 || st.LeasesExpired != 1 {
		t.Fatalf("topic stats %s (%v); want 0 reserved, 1 lease expired", body, err)
	}
}

// writeFile writes content to a new file and returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// statusAs returns the status of a request to url with token.
func statusAs(t *testing.T, method, url, token, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The server takes its tokens, roles and topics from --auth-tokens-file, and takes the file's
// new tokens when it changes without a restart; a broken file leaves the tokens as they were.
func TestServerReloadsTheTokensFile(t *testing.T) {
	t.Parallel()
	const producer, reader = "producer-token-0000001", "reader-token-000000001"
	path := writeFile(t, `{"tokens": [{"name": "checkout", "token": "`+producer+`", "role": "producer", "topics": ["orders"]}]}`)
	s := startServer(t, nil, "--auth-tokens-file", path)
	if got := statusAs(t, "POST", s.URL+"/v1/topics/orders/jobs", producer, `{"id": "j1"}`); got != http.StatusCreated {
		t.Errorf("the producer's enqueue on its topic: %d, want 201", got)
	}
	if got := statusAs(t, "POST", s.URL+"/v1/topics/payments/jobs", producer, `{"id": "j1"}`); got != http.StatusForbidden {
		t.Errorf("the producer's enqueue on another topic: %d, want 403", got)
	}
	s.must(t, "get", "orders", "j1", "--token", producer)

	replace := func(content string) {
		t.Helper()
		tmp := path + ".new"
		if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	replace(`{"tokens": [{"name": "on-call", "token": "` + reader + `", "role": "reader"}]}`)
	testwait.For(t, 15*time.Second, "the new tokens", func() bool {
		return statusAs(t, "GET", s.URL+"/v1/topics", reader, "") == http.StatusOK &&
			statusAs(t, "GET", s.URL+"/v1/topics/orders/jobs/j1", producer, "") == http.StatusUnauthorized
	})
	replace(`{"tokens": [`)
	testwait.For(t, 15*time.Second, "the broken file's log line", func() bool {
		return strings.Contains(s.logs.String(), "the tokens file was not reloaded")
	})
	if got := statusAs(t, "GET", s.URL+"/v1/topics", reader, ""); got != http.StatusOK {
		t.Errorf("the reader after a broken file: %d, want 200", got)
	}
	if strings.Contains(s.logs.String(), reader) || strings.Contains(s.logs.String(), producer) {
		t.Errorf("a token is logged:\n%s", s.logs.String())
	}
}

// With --tls-cert and --tls-key the server speaks HTTPS, HTTP/2 included, sets its session
// cookie Secure, and takes a new certificate without a restart; the CLI reaches it with
// --ca-cert.
func TestServerServesHTTPS(t *testing.T) {
	t.Parallel()
	ca := certtest.NewCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	ca.Issue(1, certFile, keyFile)
	const token = "https-token-000000001"
	s := startServer(t, map[string]string{"DELAYQ_TLS_KEY": keyFile}, "--tls-cert", certFile, "--auth-token", token)
	url := "https://" + strings.TrimPrefix(s.URL, "http://")

	if out, err := runCLI(t, map[string]string{"DELAYQ_CA_CERT": ca.CertFile}, "topics", "--server", url, "--token", token); err != nil {
		t.Errorf("delayq topics with --ca-cert: %v\n%s", err, out)
	}
	if _, err := runCLI(t, nil, "topics", "--server", url, "--token", token); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without --ca-cert: err = %v, want a certificate error", err)
	}

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: ca.Pool}, ForceAttemptHTTP2: true, DisableKeepAlives: true,
	}}
	login := func() *http.Response {
		t.Helper()
		resp, err := client.Get(url + "/login")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := login()
	if resp.ProtoMajor != 2 {
		t.Errorf("protocol %s, want HTTP/2", resp.Proto)
	}
	var secure bool
	for _, c := range resp.Cookies() {
		secure = secure || (c.Name == "delayq_session" && c.Secure)
	}
	if !secure {
		t.Errorf("the session cookie over HTTPS is not Secure: %v", resp.Header.Values("Set-Cookie"))
	}
	ca.Issue(2, certFile, keyFile)
	testwait.For(t, 15*time.Second, "the new certificate", func() bool {
		return login().TLS.PeerCertificates[0].SerialNumber.Int64() == 2
	})
}
