package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/delayq/delayq/cmd/delayq/internal/access"
	"github.com/delayq/delayq/cmd/delayq/internal/httpapi"
	"github.com/delayq/delayq/cmd/delayq/internal/tlsreload"
	"github.com/delayq/delayq/cmd/delayq/internal/webhook"
	"github.com/delayq/delayq/internal/redisurl"
)

// serverConfig is what `delayq server` is told by its flags and environment.
type serverConfig struct {
	listen             string
	redisURL           string
	dataDir            string
	namespace          string
	tokens             []string
	allowedHosts       []string
	tokensFile         string
	tlsCert            string
	tlsKey             string
	webhookSecret      string
	webhookPrevious    string
	allowCIDRs         []string
	logFormat          string
	logLevel           string
	partitions         int
	webhookConcurrency int
	shutdownTimeout    time.Duration
	requestTimeout     time.Duration
	replayWindow       time.Duration
	redisServer        string
	appendFsync        string
	metrics            bool
	metricsPublic      bool
	scheduler          bool
	dashboardReadOnly  bool
	archive            archiveConfig
	beanstalkd         beanstalkdConfig
}

func newServerCmd(stderr io.Writer) *cobra.Command {
	var cfg serverConfig
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
			opts, err := cfg.validate()
			if err != nil {
				return err
			}
			setGCPercent(os.Getenv)
			return runServer(cmd.Context(), cfg, opts, stderr)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.listen, "listen", "127.0.0.1:7070", "HTTP listen address")
	f.StringVar(&cfg.tlsCert, "tls-cert", "", "PEM certificate (chain) file: serve HTTPS, HTTP/2 included, on --listen; a new certificate written over it is taken without a restart")
	f.StringVar(&cfg.tlsKey, "tls-key", "", "PEM private key file of --tls-cert")
	f.StringVar(&cfg.redisURL, "redis", "", "Redis URL: redis://, rediss://, unix://, redis+sentinel:// or redis+cluster://; empty runs an embedded redis-server")
	f.StringVar(&cfg.dataDir, "data-dir", "./delayq-data", "where the embedded redis-server keeps its append-only file and log")
	f.StringVar(&cfg.namespace, "namespace", "delayq", "key prefix, so that several deployments can share one Redis")
	f.StringArrayVar(&cfg.tokens, "auth-token", nil, "admin API token, at least 16 bytes, that /v1/ requests must send as \"Authorization: Bearer <token>\"; repeatable")
	f.StringArrayVar(&cfg.allowedHosts, "allowed-host", nil, "host name that a server without API tokens answers besides localhost, IP addresses and the --listen host, such as queue.internal; repeatable (docs/security.md)")
	f.StringVar(&cfg.tokensFile, "auth-tokens-file", "", "JSON file of named API tokens, each with a role (admin, reader, producer, consumer) and topics; re-read on SIGHUP and when it changes (see docs/security.md)")
	f.StringVar(&cfg.webhookSecret, "webhook-secret", "", "whsec_-prefixed base64 secret that signs webhook deliveries; unset, jobs with a callback_url are refused")
	f.StringVar(&cfg.webhookPrevious, "webhook-secret-previous", "", "the secret being rotated out: deliveries are signed with it too, so receivers that still know only it verify (see docs/webhooks.md)")
	f.StringArrayVar(&cfg.allowCIDRs, "webhook-allow-cidr", nil, "private address range that callbacks may reach, such as 10.0.0.0/8; repeatable")
	f.StringVar(&cfg.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&cfg.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.IntVar(&cfg.partitions, "partitions", 0, "partitions of each new topic; each has its own hash tag, so a Redis Cluster spreads a topic over its shards (0: 16 on a Cluster, 1 on standalone and Sentinel)")
	f.IntVar(&cfg.webhookConcurrency, "webhook-concurrency", 16, "webhook deliveries in flight at once")
	f.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a shutdown waits for requests and webhook deliveries in flight")
	f.DurationVar(&cfg.requestTimeout, "request-timeout", 5*time.Second, "bound on each store call of a request, beyond a reserve's wait")
	f.DurationVar(&cfg.replayWindow, "replay-window", 30*time.Second, "how long a request sent again after a lost answer answers as the first did: an enqueue of the same id and job within it of the job's creation answers 201 with that job, even once it ran, and a cancel retried 204; every state change and every job ended within it cost Redis a small record for that long (docs/states.md); 0 turns it off")
	f.StringVar(&cfg.redisServer, "redis-server", "redis-server", "the redis-server executable of the embedded Redis, a path or a name on PATH")
	f.StringVar(&cfg.appendFsync, "redis-appendfsync", "everysec", "appendfsync of the embedded Redis: everysec (a machine crash may lose the last second) or always")
	f.BoolVar(&cfg.metrics, "metrics", true, "serve Prometheus metrics at /metrics")
	f.BoolVar(&cfg.metricsPublic, "metrics-public", false, "serve /metrics without a token even when API tokens are set (for a scrape on a private port; the series name your topics); it then answers only localhost, IP addresses, the --listen host and --allowed-host names")
	f.BoolVar(&cfg.scheduler, "scheduler", true, "enqueue the jobs of the schedules' ticks; any number of servers may, each tick still gives one job")
	f.BoolVar(&cfg.dashboardReadOnly, "dashboard-read-only", false, "show the web dashboard at / without its actions (cancel, reschedule, requeue, delete), and refuse them; the dashboard only: the API on the same port still takes every call its tokens allow (reader tokens of --auth-tokens-file limit the API)")
	cfg.archive.flags(f)
	cfg.beanstalkd.flags(f)
	f.SortFlags = false
	documentEnv(f)
	return cmd
}

// open reports whether the server has no API tokens: anyone who reaches it may do anything.
func (c *serverConfig) open() bool { return len(c.tokens) == 0 && c.tokensFile == "" }

// serverOptions are the parsed forms of the settings that need parsing.
type serverOptions struct {
	redis    *redisurl.Config // nil: embedded
	secret   []byte           // nil: push delivery off
	previous []byte           // nil: no rotation under way
	allow    []netip.Prefix
	level    slog.Level
	keyring  *access.Keyring    // the tokens; none: an open server
	tokens   *access.TokensFile // nil without --auth-tokens-file
}

// validate checks everything that can be checked before anything starts.
func (c *serverConfig) validate() (*serverOptions, error) {
	var o serverOptions
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.listen == "" {
		fail("--listen: an address is required, such as 127.0.0.1:7070")
	}
	if c.redisURL != "" {
		rc, err := redisurl.Parse(c.redisURL)
		if err != nil {
			fail("--redis: %w", err)
		}
		o.redis = rc
	} else if c.dataDir == "" {
		fail("--data-dir: a directory is required for the embedded redis-server (or pass --redis)")
	}
	for i, tok := range c.tokens {
		if err := access.CheckToken(tok); err != nil {
			fail("--auth-token (token %d of %d): %w", i+1, len(c.tokens), err)
		}
	}
	if admins, err := access.Admins(c.tokens); err == nil {
		o.keyring = access.NewKeyring(admins)
		if c.tokensFile != "" {
			tf, err := access.OpenTokensFile(c.tokensFile, admins)
			if err != nil {
				fail("--auth-tokens-file: %w", err)
			} else {
				o.tokens, o.keyring = tf, tf.Keyring()
			}
		}
	}
	switch {
	case (c.tlsCert == "") != (c.tlsKey == ""):
		fail("--tls-cert and --tls-key: give both, or neither")
	case c.tlsCert != "":
		if _, err := tlsreload.Load(c.tlsCert, c.tlsKey, slog.New(slog.DiscardHandler)); err != nil {
			fail("--tls-cert, --tls-key: %w", err)
		}
	}
	for _, h := range c.allowedHosts {
		if err := httpapi.CheckAllowedHost(h); err != nil {
			fail("--allowed-host: %w", err)
		}
	}
	c.validateWebhooks(&o, fail)
	c.archive.validate(fail)
	c.beanstalkd.validate(fail)
	switch c.logFormat {
	case "text", "json":
	default:
		fail("--log-format %q: want text or json", c.logFormat)
	}
	if err := o.level.UnmarshalText([]byte(c.logLevel)); err != nil {
		fail("--log-level %q: want debug, info, warn or error", c.logLevel)
	}
	if c.partitions < 0 || c.partitions > 1024 {
		fail("--partitions %d: want 1 to 1024, or 0 for the default", c.partitions)
	}
	if c.webhookConcurrency < 1 {
		fail("--webhook-concurrency %d: want at least 1", c.webhookConcurrency)
	}
	if c.replayWindow < 0 {
		fail("--replay-window %v: want a duration, or 0 for none", c.replayWindow)
	}
	if c.shutdownTimeout <= 0 {
		fail("--shutdown-timeout %v: want a positive duration", c.shutdownTimeout)
	}
	if c.requestTimeout <= 0 {
		fail("--request-timeout %v: want a positive duration", c.requestTimeout)
	}
	switch c.appendFsync {
	case "everysec", "always", "no":
	default:
		fail("--redis-appendfsync %q: want everysec, always or no", c.appendFsync)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &o, nil
}

// validateWebhooks checks the push delivery settings and sets their parsed forms in o.
func (c *serverConfig) validateWebhooks(o *serverOptions, fail func(format string, args ...any)) {
	if c.webhookSecret != "" {
		if !strings.HasPrefix(c.webhookSecret, "whsec_") {
			fail(`--webhook-secret: must start with "whsec_": a Standard Webhooks secret is "whsec_" followed by the base64 of 24 to 64 random bytes`)
		} else if key, err := webhook.ParseSecret(c.webhookSecret); err != nil {
			fail("--webhook-secret: %w", err)
		} else {
			o.secret = key
		}
	}
	if c.webhookPrevious != "" {
		switch key, err := webhook.ParseSecret(c.webhookPrevious); {
		case c.webhookSecret == "":
			fail("--webhook-secret-previous: needs --webhook-secret, the secret that replaces it")
		case err != nil:
			fail("--webhook-secret-previous: %w", err)
		case c.webhookPrevious == c.webhookSecret:
			fail("--webhook-secret-previous: the same as --webhook-secret; unset it when no rotation is under way")
		default:
			o.previous = key
		}
	}
	for _, s := range c.allowCIDRs {
		p, err := parsePrefix(s)
		if err != nil {
			fail("--webhook-allow-cidr: %w", err)
			continue
		}
		o.allow = append(o.allow, p)
	}
}

// parsePrefix reads a CIDR prefix, or a single address as the prefix of just that address.
func parsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	return netip.Prefix{}, fmt.Errorf("%q is not a CIDR range such as 127.0.0.0/8 or an IP address", s)
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
