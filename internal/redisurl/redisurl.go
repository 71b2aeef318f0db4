// Package redisurl turns the Redis URLs that delayq server accepts into go-redis clients.
//
// The schemes are:
//
//	redis://[user:pass@]host[:port][/db]                          one server
//	rediss://[user:pass@]host[:port][/db]                         one server over TLS
//	unix://[user:pass@]/path/to/redis.sock[?db=N]                 one server on a unix socket
//	redis+sentinel://[user:pass@]host1[:port],host2[:port]/mastername[?db=N&sentinel_password=...]
//	redis+cluster://[user:pass@]host1[:port],host2[:port]
//
// rediss+sentinel:// and rediss+cluster:// are the TLS forms of the last two. The port defaults
// to 6379 (26379 for sentinels). Query parameters shared by every scheme: db (not on a cluster),
// dial_timeout, read_timeout, write_timeout (Go durations such as 5s), pool_size, client_name;
// on TLS schemes insecure_skip_verify (or insecure), ca (a PEM file) and server_name; on
// sentinel schemes sentinel_username and sentinel_password. An unknown parameter is an error,
// so a typo is not silently ignored.
package redisurl

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Mode is the kind of deployment a URL names.
type Mode int

// The deployments a URL can name.
const (
	Standalone Mode = iota // one server (redis://, rediss://, unix://)
	Sentinel               // a primary found through Sentinel (redis+sentinel://)
	Cluster                // a Redis Cluster (redis+cluster://)
)

// String returns the mode's name.
func (m Mode) String() string {
	switch m {
	case Standalone:
		return "standalone"
	case Sentinel:
		return "sentinel"
	case Cluster:
		return "cluster"
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// ErrInvalid is matched (with errors.Is) by every error Parse returns for a malformed URL.
var ErrInvalid = errors.New("invalid Redis URL")

// Config is a parsed Redis URL.
type Config struct {
	Mode Mode
	// Network is "tcp", or "unix" for a unix:// URL.
	Network string
	// Addrs holds the server address (Standalone), the sentinels (Sentinel) or the seed nodes
	// (Cluster); a unix socket path for Network "unix".
	Addrs []string
	// MasterName is the name the sentinels know the primary by (Sentinel only).
	MasterName string
	// Username and Password authenticate to the data servers.
	Username, Password string
	// SentinelUsername and SentinelPassword authenticate to the sentinels.
	SentinelUsername, SentinelPassword string
	// DB is the database number (not on a Cluster).
	DB int
	// TLS is non-nil for rediss schemes.
	TLS *tls.Config
	// Timeouts and pool size; zero fields take go-redis's defaults.
	DialTimeout, ReadTimeout, WriteTimeout time.Duration
	PoolSize                               int
	// ClientName is sent with CLIENT SETNAME on each connection.
	ClientName string
	// Redacted is the URL with its passwords masked, for logs and error messages.
	Redacted string
}

// NewClient parses rawURL and returns a client for it: a *redis.Client for a standalone
// server, a failover *redis.Client for Sentinel, a *redis.ClusterClient for a Cluster.
// It does not connect.
func NewClient(rawURL string) (redis.UniversalClient, error) {
	c, err := Parse(rawURL)
	if err != nil {
		return nil, err
	}
	return c.NewClient(), nil
}

// NewClient returns a client for the parsed URL. It does not connect.
func (c *Config) NewClient() redis.UniversalClient {
	o := &redis.UniversalOptions{
		Addrs:            c.Addrs,
		MasterName:       c.MasterName,
		SentinelUsername: c.SentinelUsername,
		SentinelPassword: c.SentinelPassword,
		Username:         c.Username,
		Password:         c.Password,
		DB:               c.DB,
		TLSConfig:        c.TLS,
		DialTimeout:      c.DialTimeout,
		ReadTimeout:      c.ReadTimeout,
		WriteTimeout:     c.WriteTimeout,
		PoolSize:         c.PoolSize,
		ClientName:       c.ClientName,
		// Deadlines of request contexts bound Redis calls, so a hung Redis cannot hang a request.
		ContextTimeoutEnabled: true,
	}
	switch c.Mode {
	case Sentinel:
		return redis.NewFailoverClient(o.Failover())
	case Cluster:
		return redis.NewClusterClient(o.Cluster())
	default:
		opt := o.Simple()
		opt.Network = c.Network // UniversalOptions carries no network
		return redis.NewClient(opt)
	}
}

// Parse parses a Redis URL. Its errors match ErrInvalid and never show a password.
func Parse(rawURL string) (*Config, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok || scheme == "" {
		return nil, invalidf("%q has no scheme: want redis://, rediss://, unix://, redis+sentinel:// or redis+cluster://", redactRaw(rawURL))
	}
	c := &Config{Network: "tcp"}
	scheme = strings.ToLower(scheme)
	base, secure := scheme, false
	switch scheme {
	case "redis", "unix":
	case "rediss":
		base, secure = "redis", true
	case "redis+sentinel", "redis+cluster":
	case "rediss+sentinel", "rediss+cluster":
		base, secure = "redis"+strings.TrimPrefix(scheme, "rediss"), true
	default:
		return nil, invalidf("unknown scheme %q: want redis://, rediss://, unix://, redis+sentinel:// or redis+cluster://", scheme)
	}
	switch base {
	case "redis+sentinel":
		c.Mode = Sentinel
	case "redis+cluster":
		c.Mode = Cluster
	case "unix":
		c.Network = "unix"
	}

	// The authority may hold several comma-separated hosts, which net/url does not accept; take
	// it apart by hand and let net/url read the user info, path and query.
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	userinfo, hosts := "", authority
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		userinfo, hosts = authority[:i+1], authority[i+1:]
	}
	u, err := url.Parse("x://" + userinfo + "h" + tail)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, invalidf("%s URL: %v", scheme, err)
	}
	if u.Fragment != "" {
		return nil, invalidf("%s URL: a fragment (#...) has no meaning here", scheme)
	}
	if u.User != nil {
		c.Username = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	c.Redacted = redact(scheme, u, hosts)

	if err := c.setAddrs(scheme, hosts, u.Path); err != nil {
		return nil, err
	}
	if err := c.setQuery(scheme, u.Query(), secure); err != nil {
		return nil, err
	}
	if secure && c.TLS == nil {
		c.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if c.TLS != nil && c.TLS.ServerName == "" && c.Mode == Standalone {
		c.TLS.ServerName, _, _ = net.SplitHostPort(c.Addrs[0])
	}
	return c, nil
}

// setAddrs reads the hosts and the path, whose meaning depends on the mode.
func (c *Config) setAddrs(scheme, hosts, path string) error {
	if c.Network == "unix" {
		if hosts != "" {
			return invalidf("unix URL: want unix:///path/to/redis.sock, got host %q", hosts)
		}
		if path == "" || path == "/" {
			return invalidf("unix URL: the socket path is missing")
		}
		c.Addrs = []string{path}
		return nil
	}
	if hosts == "" {
		return invalidf("%s URL: the host is missing", scheme)
	}
	defaultPort := "6379"
	if c.Mode == Sentinel {
		defaultPort = "26379"
	}
	list := strings.Split(hosts, ",")
	if c.Mode == Standalone && len(list) > 1 {
		return invalidf("%s URL names %d hosts: use redis+cluster:// or redis+sentinel:// for several", scheme, len(list))
	}
	for _, h := range list {
		addr, err := hostPort(h, defaultPort)
		if err != nil {
			return invalidf("%s URL: %v", scheme, err)
		}
		c.Addrs = append(c.Addrs, addr)
	}

	segs := strings.FieldsFunc(path, func(r rune) bool { return r == '/' })
	switch c.Mode {
	case Standalone:
		if len(segs) > 1 {
			return invalidf("%s URL: path %q: want at most a database number, as in /0", scheme, path)
		}
		if len(segs) == 1 {
			db, err := parseDB(segs[0])
			if err != nil {
				return invalidf("%s URL: %v", scheme, err)
			}
			c.DB = db
		}
	case Sentinel:
		if len(segs) != 1 {
			return invalidf("%s URL: want the master name as the path, as in %s://host:26379/mymaster", scheme, scheme)
		}
		name, err := url.PathUnescape(segs[0])
		if err != nil {
			return invalidf("%s URL: master name %q: %v", scheme, segs[0], err)
		}
		c.MasterName = name
	case Cluster:
		if len(segs) > 0 {
			return invalidf("%s URL: path %q: a cluster has only database 0 and takes no path", scheme, path)
		}
	}
	return nil
}

// hostPort validates one host[:port] and adds the default port.
func hostPort(h, defaultPort string) (string, error) {
	if h == "" {
		return "", errors.New("an empty host in the host list")
	}
	host, port := h, defaultPort
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return "", fmt.Errorf("host %q: missing ]", h)
		}
		host = h[1:end]
		if after := h[end+1:]; after != "" {
			if !strings.HasPrefix(after, ":") {
				return "", fmt.Errorf("host %q: unexpected %q after ]", h, after)
			}
			port = after[1:]
		}
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 {
		host, port = h[:i], h[i+1:]
		if strings.Contains(host, ":") {
			return "", fmt.Errorf("host %q: put IPv6 addresses in brackets, as in [::1]:6379", h)
		}
	}
	if host == "" {
		return "", fmt.Errorf("host %q: the host name is missing", h)
	}
	if strings.ContainsAny(host, " \t%") {
		return "", fmt.Errorf("host %q: not a host name", h)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("host %q: port %q is not a number from 1 to 65535", h, port)
	}
	return net.JoinHostPort(host, port), nil
}

func parseDB(s string) (int, error) {
	db, err := strconv.Atoi(s)
	if err != nil || db < 0 {
		return 0, fmt.Errorf("database %q is not a number ≥ 0", s)
	}
	return db, nil
}

// setQuery applies the query parameters; any left over is an error.
func (c *Config) setQuery(scheme string, q url.Values, secure bool) error {
	take := func(name string) (string, bool, error) {
		vs, ok := q[name]
		if !ok {
			return "", false, nil
		}
		delete(q, name)
		if len(vs) != 1 {
			return "", false, invalidf("%s URL: parameter %s given %d times", scheme, name, len(vs))
		}
		return vs[0], true, nil
	}
	var err error
	duration := func(name string, dst *time.Duration) {
		v, ok, e := take(name)
		if e != nil || !ok {
			err = errors.Join(err, e)
			return
		}
		d, e := time.ParseDuration(v)
		if e != nil || d < 0 {
			err = errors.Join(err, invalidf("%s URL: %s=%q is not a duration such as 5s", scheme, name, v))
			return
		}
		*dst = d
	}
	duration("dial_timeout", &c.DialTimeout)
	duration("read_timeout", &c.ReadTimeout)
	duration("write_timeout", &c.WriteTimeout)
	if err != nil {
		return err
	}
	if v, ok, err := take("pool_size"); err != nil {
		return err
	} else if ok {
		n, e := strconv.Atoi(v)
		if e != nil || n < 1 {
			return invalidf("%s URL: pool_size=%q is not a number ≥ 1", scheme, v)
		}
		c.PoolSize = n
	}
	if v, ok, err := take("client_name"); err != nil {
		return err
	} else if ok {
		c.ClientName = v
	}
	if v, ok, err := take("db"); err != nil {
		return err
	} else if ok {
		if c.Mode == Cluster {
			return invalidf("%s URL: a cluster has only database 0", scheme)
		}
		db, e := parseDB(v)
		if e != nil {
			return invalidf("%s URL: %v", scheme, e)
		}
		c.DB = db
	}
	if c.Mode == Sentinel {
		for name, dst := range map[string]*string{"sentinel_username": &c.SentinelUsername, "sentinel_password": &c.SentinelPassword} {
			v, ok, err := take(name)
			if err != nil {
				return err
			}
			if ok {
				*dst = v
			}
		}
	}
	if secure {
		if err := c.setTLS(scheme, take); err != nil {
			return err
		}
	}
	if len(q) > 0 {
		names := slices.Sorted(maps.Keys(q))
		return invalidf("%s URL: unknown parameter %q", scheme, names[0])
	}
	return nil
}

// setTLS reads the TLS parameters of a rediss URL.
func (c *Config) setTLS(scheme string, take func(string) (string, bool, error)) error {
	c.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	for _, name := range []string{"insecure_skip_verify", "insecure"} {
		v, ok, err := take(name)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		b, e := strconv.ParseBool(v)
		if e != nil {
			return invalidf("%s URL: %s=%q is not true or false", scheme, name, v)
		}
		c.TLS.InsecureSkipVerify = b
	}
	if v, ok, err := take("server_name"); err != nil {
		return err
	} else if ok {
		c.TLS.ServerName = v
	}
	if v, ok, err := take("ca"); err != nil {
		return err
	} else if ok {
		pem, e := os.ReadFile(v)
		if e != nil {
			return fmt.Errorf("%w: %s URL: reading the ca file: %w", ErrInvalid, scheme, e)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return invalidf("%s URL: ca file %q holds no PEM certificate", scheme, v)
		}
		c.TLS.RootCAs = pool
	}
	return nil
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// redact rebuilds the URL for display with the passwords masked.
func redact(scheme string, u *url.URL, hosts string) string {
	var b strings.Builder
	b.WriteString(scheme + "://")
	if u.User != nil {
		b.WriteString(url.PathEscape(u.User.Username()))
		if _, ok := u.User.Password(); ok {
			b.WriteString(":xxxxx")
		}
		b.WriteString("@")
	}
	b.WriteString(hosts)
	b.WriteString(u.EscapedPath())
	if u.RawQuery != "" {
		q := u.Query()
		for _, k := range []string{"sentinel_password"} {
			if q.Has(k) {
				q.Set(k, "xxxxx")
			}
		}
		b.WriteString("?" + q.Encode())
	}
	return b.String()
}

// redactRaw masks what may be a password in a string that did not parse as a URL.
func redactRaw(s string) string {
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		return "xxxxx" + s[i:]
	}
	return s
}
