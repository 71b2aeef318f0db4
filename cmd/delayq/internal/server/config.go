package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/access"
	"github.com/delayq/delayq/cmd/delayq/internal/beanstalkd/proto"
	"github.com/delayq/delayq/cmd/delayq/internal/httpapi"
	"github.com/delayq/delayq/cmd/delayq/internal/tlsreload"
	"github.com/delayq/delayq/cmd/delayq/internal/webhook"
	"github.com/delayq/delayq/internal/redisurl"
)

// Config is what a Server is built from: the settings of `delayq server`, one field per flag.
// Errors and log lines name the flags (--listen, --redis, …), since that is how operators set
// them. DefaultConfig returns the flags' defaults; the zero value of a field is not its
// default.
type Config struct {
	// Listen is the HTTP address the server is reached at (--listen), such as 127.0.0.1:7070.
	// The server does not listen itself: Serve takes the listener. Listen decides which Host
	// names a server without tokens answers, and whether it warns that it is open beyond
	// loopback. Defaults to 127.0.0.1:7070.
	Listen string
	// RedisURL is the Redis to use (--redis): redis://, rediss://, unix://, redis+sentinel://
	// or redis+cluster://. Empty runs an embedded redis-server in DataDir.
	RedisURL string
	// DataDir is where the embedded redis-server keeps its append-only file and log
	// (--data-dir). Defaults to ./delayq-data.
	DataDir string
	// RedisServer is the redis-server executable of the embedded Redis, a path or a name on
	// PATH (--redis-server). Defaults to redis-server.
	RedisServer string
	// AppendFsync is the embedded Redis's appendfsync: everysec, always or no
	// (--redis-appendfsync). Defaults to everysec.
	AppendFsync string
	// Namespace is the key prefix (--namespace). Defaults to delayq.
	Namespace string
	// Partitions is the number of partitions of each new topic (--partitions); 0 leaves it to
	// the library: 16 on a Cluster, 1 otherwise.
	Partitions int

	// Tokens are admin API tokens, at least 16 bytes each (--auth-token).
	Tokens []string
	// TokensFile is a JSON file of named tokens with roles and topics (--auth-tokens-file),
	// re-read on SIGHUP and when it changes.
	TokensFile string
	// AllowedHosts are host names a server without tokens answers besides localhost, IP
	// addresses and Listen's host (--allowed-host).
	AllowedHosts []string
	// TLSCert and TLSKey are PEM files (--tls-cert, --tls-key): with both, Serve speaks HTTPS,
	// and takes a new certificate written over them without a restart.
	TLSCert, TLSKey string

	// WebhookSecret is the whsec_ secret that signs webhook deliveries (--webhook-secret).
	// Empty turns push delivery off: jobs with a callback_url are refused.
	WebhookSecret string
	// WebhookSecretPrevious is the secret being rotated out (--webhook-secret-previous).
	WebhookSecretPrevious string
	// WebhookAllowCIDRs are private address ranges, or single addresses, that callbacks may
	// reach (--webhook-allow-cidr).
	WebhookAllowCIDRs []string
	// WebhookConcurrency is the number of webhook deliveries in flight at once
	// (--webhook-concurrency). Defaults to 16.
	WebhookConcurrency int

	// ShutdownTimeout bounds how long Serve's shutdown waits for requests and webhook
	// deliveries in flight (--shutdown-timeout). Defaults to 30s.
	ShutdownTimeout time.Duration
	// RequestTimeout bounds each store call of a request, beyond a reserve's wait
	// (--request-timeout). Defaults to 5s.
	RequestTimeout time.Duration
	// ReplayWindow is how long a request sent again after a lost answer answers as the first
	// did (--replay-window; the library's Config.ReplayWindow, docs/states.md); 0 turns it
	// off. Defaults to 30s.
	ReplayWindow time.Duration
	// UniqueFor is how long the id of a job enqueued with an id stays taken once the job ends,
	// for jobs that name no unique_for_ms in topics without a default of their own
	// (--unique-for; the library's Config.UniqueFor). Defaults to 0: none.
	UniqueFor time.Duration

	// Metrics serves Prometheus metrics at /metrics (--metrics). Defaults to true.
	Metrics bool
	// MetricsPublic serves /metrics without a token even when the server has tokens
	// (--metrics-public).
	MetricsPublic bool
	// Scheduler enqueues the jobs of the schedules' ticks (--scheduler). Defaults to true.
	Scheduler bool
	// DashboardReadOnly shows the web dashboard without its actions (--dashboard-read-only).
	DashboardReadOnly bool

	// Archive is the job history in PostgreSQL: off without a URL.
	Archive ArchiveConfig
	// Beanstalkd is the beanstalkd front end: off without an address.
	Beanstalkd BeanstalkdConfig
}

// ArchiveConfig is the server's job history in PostgreSQL (package archive).
type ArchiveConfig struct {
	// URL is the PostgreSQL URL of the history (--archive); empty: no history.
	URL string
	// Bodies keeps each job's body in the history (--archive-bodies). Defaults to true.
	Bodies bool
	// Failed archives every failed attempt too, not only each job's end (--archive-failed).
	Failed bool
	// Keep is how many outcomes each partition keeps in Redis while PostgreSQL is down or
	// slow (--archive-keep). Defaults to 100,000.
	Keep int64
	// Retention is how old history rows get before they are deleted; 0 keeps them forever
	// (--archive-retention). Defaults to 30 days.
	Retention time.Duration
}

// BeanstalkdConfig is the server's beanstalkd front end (docs/beanstalkd.md).
type BeanstalkdConfig struct {
	// Listen is the address of the beanstalkd protocol (--beanstalkd-listen); empty: off.
	Listen string
	// MaxConns is the number of beanstalkd connections served at once
	// (--beanstalkd-max-conns). Defaults to 10,000.
	MaxConns int
	// MaxJobSize is the largest job body a beanstalkd client may put, in bytes
	// (--beanstalkd-max-job-size). Defaults to beanstalkd's 65,535.
	MaxJobSize int
}

// DefaultConfig returns the defaults of `delayq server`'s flags.
func DefaultConfig() Config {
	return Config{
		Listen:             "127.0.0.1:7070",
		DataDir:            "./delayq-data",
		RedisServer:        "redis-server",
		AppendFsync:        "everysec",
		Namespace:          "delayq",
		WebhookConcurrency: 16,
		ShutdownTimeout:    30 * time.Second,
		RequestTimeout:     5 * time.Second,
		ReplayWindow:       30 * time.Second,
		Metrics:            true,
		Scheduler:          true,
		Archive:            ArchiveConfig{Bodies: true, Keep: 100_000, Retention: 30 * 24 * time.Hour},
		Beanstalkd:         BeanstalkdConfig{MaxConns: 10000, MaxJobSize: proto.DefaultMaxJobSize},
	}
}

// open reports whether the server has no API tokens: anyone who reaches it may do anything.
func (c *Config) open() bool { return len(c.Tokens) == 0 && c.TokensFile == "" }

// parsed are the parsed forms of the settings that need parsing.
type parsed struct {
	redis    *redisurl.Config // nil: embedded
	secret   []byte           // nil: push delivery off
	previous []byte           // nil: no rotation under way
	allow    []netip.Prefix
	keyring  *access.Keyring    // the tokens; none: an open server
	tokens   *access.TokensFile // nil without TokensFile
}

// Validate checks everything that can be checked before anything starts, and reports every
// problem it finds. New calls it.
func (c *Config) Validate() error {
	_, err := c.parse()
	return err
}

// parse validates c and returns the parsed forms of its settings.
func (c *Config) parse() (*parsed, error) {
	var p parsed
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Listen == "" {
		fail("--listen: an address is required, such as 127.0.0.1:7070")
	}
	if c.RedisURL != "" {
		rc, err := redisurl.Parse(c.RedisURL)
		if err != nil {
			fail("--redis: %w", err)
		}
		p.redis = rc
	} else if c.DataDir == "" {
		fail("--data-dir: a directory is required for the embedded redis-server (or pass --redis)")
	}
	for i, tok := range c.Tokens {
		if err := access.CheckToken(tok); err != nil {
			fail("--auth-token (token %d of %d): %w", i+1, len(c.Tokens), err)
		}
	}
	if admins, err := access.Admins(c.Tokens); err == nil {
		p.keyring = access.NewKeyring(admins)
		if c.TokensFile != "" {
			tf, err := access.OpenTokensFile(c.TokensFile, admins)
			if err != nil {
				fail("--auth-tokens-file: %w", err)
			} else {
				p.tokens, p.keyring = tf, tf.Keyring()
			}
		}
	}
	switch {
	case (c.TLSCert == "") != (c.TLSKey == ""):
		fail("--tls-cert and --tls-key: give both, or neither")
	case c.TLSCert != "":
		if _, err := tlsreload.Load(c.TLSCert, c.TLSKey, slog.New(slog.DiscardHandler)); err != nil {
			fail("--tls-cert, --tls-key: %w", err)
		}
	}
	for _, h := range c.AllowedHosts {
		if err := httpapi.CheckAllowedHost(h); err != nil {
			fail("--allowed-host: %w", err)
		}
	}
	c.parseWebhooks(&p, fail)
	c.Archive.validate(fail)
	c.Beanstalkd.validate(fail)
	if c.Partitions < 0 || c.Partitions > 1024 {
		fail("--partitions %d: want 1 to 1024, or 0 for the default", c.Partitions)
	}
	if c.WebhookConcurrency < 1 {
		fail("--webhook-concurrency %d: want at least 1", c.WebhookConcurrency)
	}
	if c.ShutdownTimeout <= 0 {
		fail("--shutdown-timeout %v: want a positive duration", c.ShutdownTimeout)
	}
	if c.ReplayWindow < 0 {
		fail("--replay-window %v: want a duration, or 0 for none", c.ReplayWindow)
	}
	if c.UniqueFor < 0 {
		fail("--unique-for %v: want a duration, or 0 for none", c.UniqueFor)
	}
	if c.RequestTimeout <= 0 {
		fail("--request-timeout %v: want a positive duration", c.RequestTimeout)
	}
	switch c.AppendFsync {
	case "everysec", "always", "no":
	default:
		fail("--redis-appendfsync %q: want everysec, always or no", c.AppendFsync)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &p, nil
}

// parseWebhooks checks the push delivery settings and sets their parsed forms in p.
func (c *Config) parseWebhooks(p *parsed, fail func(format string, args ...any)) {
	if c.WebhookSecret != "" {
		if !strings.HasPrefix(c.WebhookSecret, "whsec_") {
			fail(`--webhook-secret: must start with "whsec_": a Standard Webhooks secret is "whsec_" followed by the base64 of 24 to 64 random bytes`)
		} else if key, err := webhook.ParseSecret(c.WebhookSecret); err != nil {
			fail("--webhook-secret: %w", err)
		} else {
			p.secret = key
		}
	}
	if c.WebhookSecretPrevious != "" {
		switch key, err := webhook.ParseSecret(c.WebhookSecretPrevious); {
		case c.WebhookSecret == "":
			fail("--webhook-secret-previous: needs --webhook-secret, the secret that replaces it")
		case err != nil:
			fail("--webhook-secret-previous: %w", err)
		case c.WebhookSecretPrevious == c.WebhookSecret:
			fail("--webhook-secret-previous: the same as --webhook-secret; unset it when no rotation is under way")
		default:
			p.previous = key
		}
	}
	for _, s := range c.WebhookAllowCIDRs {
		pfx, err := parsePrefix(s)
		if err != nil {
			fail("--webhook-allow-cidr: %w", err)
			continue
		}
		p.allow = append(p.allow, pfx)
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

func (a *ArchiveConfig) validate(fail func(string, ...any)) {
	if a.URL == "" {
		return
	}
	if u, err := url.Parse(a.URL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		fail("--archive: want a postgres:// URL")
	}
	if a.Keep < 1 {
		fail("--archive-keep %d: want at least 1", a.Keep)
	}
	if a.Retention < 0 {
		fail("--archive-retention %v: want 0 (forever) or more", a.Retention)
	}
}

func (b *BeanstalkdConfig) validate(fail func(string, ...any)) {
	if b.Listen == "" {
		return
	}
	if b.MaxConns < 1 {
		fail("--beanstalkd-max-conns %d: want at least 1", b.MaxConns)
	}
	if b.MaxJobSize < 1 || b.MaxJobSize > 1<<20 {
		fail("--beanstalkd-max-job-size %d: want 1 to %d (delayq's largest body)", b.MaxJobSize, 1<<20)
	}
}
