package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/delayq/delayq/cmd/delayq/internal/server"
)

// serverFlags is what `delayq server` is told by its flags and environment: the server's
// Config, and how it logs.
type serverFlags struct {
	config    server.Config
	logFormat string
	logLevel  string
}

func newServerCmd(stderr io.Writer) *cobra.Command {
	var flags serverFlags
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the delayq HTTP API server",
		Long: strings.TrimSpace(`
Run the delayq HTTP API server: producing, consuming, dead letters, schedules (recurring jobs,
whose ticks it enqueues unless --scheduler=false), webhook push delivery, /metrics and health
endpoints, and the web dashboard at /.

Without --redis it runs its own redis-server child process, listening on a unix socket only,
with its append-only file in --data-dir; redis-server must be installed. With --redis it uses
that Redis (standalone, Sentinel or Cluster).

It logs "listening on <addr>" once it accepts connections, and on SIGINT or SIGTERM stops
accepting, lets requests and webhook deliveries in flight finish (up to --shutdown-timeout),
and exits 0.

Unless GOGC is set, it runs Go's garbage collector at GOGC=400: its heap is small, and
collecting it less often takes about a tenth less CPU per request under load. Where its
memory is capped (a container's limit), set GOMEMLIMIT a little below the cap as well, so
that the collector runs sooner when the heap nears it.`),
		Example: `  delayq server
  delayq server --listen :7070 --redis redis://:password@redis.internal:6379/0
  delayq server --redis 'redis+sentinel://s1:26379,s2:26379/mymaster'
  delayq server --auth-token "$TOKEN" --webhook-secret whsec_...
  delayq server --listen :7443 --auth-tokens-file tokens.json --tls-cert cert.pem --tls-key key.pem`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := flags.validate(stderr)
			if err != nil {
				return err
			}
			setGCPercent(os.Getenv)
			return runServer(cmd.Context(), flags.config, log)
		},
	}
	f := cmd.Flags()
	cfg, d := &flags.config, server.DefaultConfig()
	f.StringVar(&cfg.Listen, "listen", d.Listen, "HTTP listen address")
	f.StringVar(&cfg.TLSCert, "tls-cert", "", "PEM certificate (chain) file: serve HTTPS, HTTP/2 included, on --listen; a new certificate written over it is taken without a restart")
	f.StringVar(&cfg.TLSKey, "tls-key", "", "PEM private key file of --tls-cert")
	f.StringVar(&cfg.RedisURL, "redis", "", "Redis URL: redis://, rediss://, unix://, redis+sentinel:// or redis+cluster://; empty runs an embedded redis-server")
	f.StringVar(&cfg.DataDir, "data-dir", d.DataDir, "where the embedded redis-server keeps its append-only file and log")
	f.StringVar(&cfg.Namespace, "namespace", d.Namespace, "key prefix, so that several deployments can share one Redis")
	f.StringArrayVar(&cfg.Tokens, "auth-token", nil, "admin API token, at least 16 bytes, that /v1/ requests must send as \"Authorization: Bearer <token>\"; repeatable")
	f.StringArrayVar(&cfg.AllowedHosts, "allowed-host", nil, "host name that a server without API tokens answers besides localhost, IP addresses and the --listen host, such as queue.internal; repeatable (docs/security.md)")
	f.StringVar(&cfg.TokensFile, "auth-tokens-file", "", "JSON file of named API tokens, each with a role (admin, reader, producer, consumer) and topics; re-read on SIGHUP and when it changes (see docs/security.md)")
	f.StringVar(&cfg.WebhookSecret, "webhook-secret", "", "whsec_-prefixed base64 secret that signs webhook deliveries; unset, jobs with a callback_url are refused")
	f.StringVar(&cfg.WebhookSecretPrevious, "webhook-secret-previous", "", "the secret being rotated out: deliveries are signed with it too, so receivers that still know only it verify (see docs/webhooks.md)")
	f.StringArrayVar(&cfg.WebhookAllowCIDRs, "webhook-allow-cidr", nil, "private address range that callbacks may reach, such as 10.0.0.0/8; repeatable")
	f.StringVar(&flags.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&flags.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.IntVar(&cfg.Partitions, "partitions", d.Partitions, "partitions of each new topic; each has its own hash tag, so a Redis Cluster spreads a topic over its shards (0: 16 on a Cluster, 1 on standalone and Sentinel)")
	f.IntVar(&cfg.WebhookConcurrency, "webhook-concurrency", d.WebhookConcurrency, "webhook deliveries in flight at once")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", d.ShutdownTimeout, "how long a shutdown waits for requests and webhook deliveries in flight")
	f.DurationVar(&cfg.ReplayWindow, "replay-window", d.ReplayWindow, "how long a request sent again after a lost answer answers as the first did: an enqueue of the same id and job within it of the job's creation answers 201 with that job, even once it ran, and a cancel retried 204; every state change and every job ended within it cost Redis a small record for that long (docs/states.md); 0 turns it off")
	f.DurationVar(&cfg.UniqueFor, "unique-for", d.UniqueFor, "how long the id of a job enqueued with an id stays taken once the job ends, for jobs that give no unique_for_ms in topics without a default of their own: an enqueue of the id is refused as already_done until then (docs/producers.md); 0: none")
	f.DurationVar(&cfg.RequestTimeout, "request-timeout", d.RequestTimeout, "bound on each store call of a request, beyond a reserve's wait")
	f.StringVar(&cfg.RedisServer, "redis-server", d.RedisServer, "the redis-server executable of the embedded Redis, a path or a name on PATH")
	f.StringVar(&cfg.AppendFsync, "redis-appendfsync", d.AppendFsync, "appendfsync of the embedded Redis: everysec (a machine crash may lose the last second) or always")
	f.BoolVar(&cfg.Metrics, "metrics", d.Metrics, "serve Prometheus metrics at /metrics")
	f.BoolVar(&cfg.MetricsPublic, "metrics-public", d.MetricsPublic, "serve /metrics without a token even when API tokens are set (for a scrape on a private port; the series name your topics); it then answers only localhost, IP addresses, the --listen host and --allowed-host names")
	f.BoolVar(&cfg.Scheduler, "scheduler", d.Scheduler, "enqueue the jobs of the schedules' ticks; any number of servers may, each tick still gives one job")
	f.BoolVar(&cfg.DashboardReadOnly, "dashboard-read-only", d.DashboardReadOnly, "show the web dashboard at / without its actions (cancel, reschedule, requeue, delete), and refuse them; the dashboard only: the API on the same port still takes every call its tokens allow (reader tokens of --auth-tokens-file limit the API)")
	archiveFlags(f, &cfg.Archive, d.Archive)
	beanstalkdFlags(f, &cfg.Beanstalkd, d.Beanstalkd)
	f.SortFlags = false
	documentEnv(f)
	return cmd
}

func archiveFlags(f *pflag.FlagSet, a *server.ArchiveConfig, d server.ArchiveConfig) {
	f.StringVar(&a.URL, "archive", d.URL, "PostgreSQL URL (postgres://user:password@host/db) of the job history: every job's end is archived there and searchable (docs/history.md); empty: no history")
	f.BoolVar(&a.Bodies, "archive-bodies", d.Bodies, "keep each job's body in the history")
	f.BoolVar(&a.Failed, "archive-failed", d.Failed, "archive every failed attempt too, not only each job's end")
	f.Int64Var(&a.Keep, "archive-keep", d.Keep, "outcomes each partition keeps in Redis while PostgreSQL is down or slow; past it the oldest are dropped and counted")
	f.DurationVar(&a.Retention, "archive-retention", d.Retention, "delete history rows older than this (0: keep them forever)")
}

func beanstalkdFlags(f *pflag.FlagSet, b *server.BeanstalkdConfig, d server.BeanstalkdConfig) {
	f.StringVar(&b.Listen, "beanstalkd-listen", d.Listen, "also serve the beanstalkd protocol on this address, such as 127.0.0.1:11300, for existing beanstalkd clients (docs/beanstalkd.md); empty: off")
	f.IntVar(&b.MaxConns, "beanstalkd-max-conns", d.MaxConns, "beanstalkd connections served at once; one more is closed at once")
	f.IntVar(&b.MaxJobSize, "beanstalkd-max-job-size", d.MaxJobSize, "largest job body a beanstalkd client may put, in bytes (beanstalkd's -z)")
}

// validate checks the flags before anything starts, reporting every problem at once, and
// returns the server's logger, writing text or JSON lines to w.
func (c *serverFlags) validate(w io.Writer) (*slog.Logger, error) {
	var errs []error
	if err := c.config.Validate(); err != nil {
		errs = append(errs, err)
	}
	switch c.logFormat {
	case "text", "json":
	default:
		errs = append(errs, fmt.Errorf("--log-format %q: want text or json", c.logFormat))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		errs = append(errs, fmt.Errorf("--log-level %q: want debug, info, warn or error", c.logLevel))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	o := &slog.HandlerOptions{Level: level}
	if c.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return slog.New(slog.NewTextHandler(w, o)), nil
}

// runServer builds the server, listens on its --listen address and serves until ctx ends.
func runServer(ctx context.Context, cfg server.Config, log *slog.Logger) error {
	s, err := server.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		_ = s.Close()
		return fmt.Errorf("--listen %s: %w", cfg.Listen, err)
	}
	return s.Serve(ctx, ln)
}

// serverGCPercent is the server's garbage collection target unless GOGC says otherwise. Its
// live heap is small (requests in flight, a few MB), so at Go's default of 100 it collected so
// often under load that collection took about a tenth of its CPU (make bench-peers, http).
const serverGCPercent = 400

// setGCPercent applies serverGCPercent unless the environment sets GOGC.
func setGCPercent(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(serverGCPercent)
	}
}
