package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"

	"github.com/delayq/delayq"
)

// Errors a Guard returns. Both also match delayq.ErrInvalid, so that an HTTP layer that maps
// delayq's errors answers a refused callback_url with 400 invalid_argument.
var (
	// ErrForbiddenAddress: a callback URL's host is, or resolves to, an address callbacks must
	// not reach (loopback, private, link-local, multicast, …) and no allowed prefix holds it.
	ErrForbiddenAddress error = invalidError("webhook: forbidden address")
	// ErrInvalidURL: a callback URL is not an http or https URL with a host, or its host does
	// not resolve.
	ErrInvalidURL error = invalidError("webhook: invalid callback URL")
)

// invalidError is a sentinel that also matches delayq.ErrInvalid.
type invalidError string

func (e invalidError) Error() string { return string(e) }

// Is makes errors.Is(err, delayq.ErrInvalid) true.
func (e invalidError) Is(target error) bool { return target == delayq.ErrInvalid }

// Resolver looks up the addresses of a host name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// GuardOption configures a Guard.
type GuardOption func(*Guard)

// WithResolver makes a Guard look host names up with r instead of net.DefaultResolver.
func WithResolver(r Resolver) GuardOption {
	return func(g *Guard) { g.resolver = r }
}

// Guard refuses connections to addresses a callback must not reach: loopback, private,
// link-local (and so cloud metadata services), multicast, unspecified, shared (CGNAT), unique
// local, broadcast and the other special-purpose ranges (IETF protocol assignments,
// benchmarking, documentation, reserved 240/4, IPv6 outside global unicast, …), with IPv4
// addresses embedded in IPv6 (IPv4-mapped, NAT64, 6to4) judged as the IPv4 address they carry.
// An address inside one of the allowed prefixes passes whatever its range.
//
// A Guard is used twice: CheckURL when a job is enqueued, and the dialer of HTTPClient when it
// is delivered, which checks the address it actually connects to, so that a host name that
// resolves differently the second time (DNS rebinding) cannot pass. It is safe for concurrent use.
type Guard struct {
	allow    []netip.Prefix
	resolver Resolver
}

// NewGuard returns a Guard that lets callbacks reach the prefixes in allow (for example
// 127.0.0.0/8 in tests) besides public addresses. IPv4-mapped IPv6 prefixes
// (::ffff:a.b.c.d/n, n ≥ 96) are taken as the IPv4 prefix they carry; invalid prefixes are
// ignored. Host names are looked up with net.DefaultResolver unless WithResolver says otherwise.
func NewGuard(allow []netip.Prefix, opts ...GuardOption) *Guard {
	g := &Guard{resolver: net.DefaultResolver}
	for _, p := range allow {
		if !p.IsValid() {
			continue
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		g.allow = append(g.allow, p.Masked())
	}
	for _, o := range opts {
		o(g)
	}
	return g
}

// CheckURL reports whether rawURL is an http or https URL whose host a callback may reach: an
// IP literal is checked as it is; a host name is looked up and refused when any of its addresses
// is forbidden. A literal is refused before any connection is tried. Errors wrap
// ErrForbiddenAddress (and name the address) or ErrInvalidURL.
func (g *Guard) CheckURL(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: %q: the scheme must be http or https", ErrInvalidURL, rawURL)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("%w: %q has no host", ErrInvalidURL, rawURL)
	}
	_, err = g.lookup(ctx, u.Hostname())
	return err
}

// CheckAddr reports whether a callback may connect to addr; the error wraps ErrForbiddenAddress.
func (g *Guard) CheckAddr(addr netip.Addr) error {
	addr = addr.WithZone("")
	if why := g.forbidden(addr); why != "" {
		return fmt.Errorf("%w: %s is %s", ErrForbiddenAddress, addr, why)
	}
	return nil
}

// lookup returns the addresses of host, an IP literal or a name, once every one of them has
// passed the check.
func (g *Guard) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, g.CheckAddr(a)
	}
	addrs, err := g.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("%w: looking up %q: %w", ErrInvalidURL, host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: %q has no addresses", ErrInvalidURL, host)
	}
	for _, a := range addrs {
		a = a.WithZone("")
		if why := g.forbidden(a); why != "" {
			return nil, fmt.Errorf("%w: %s resolves to %s, which is %s", ErrForbiddenAddress, host, a, why)
		}
	}
	return addrs, nil
}

// forbidden says why a is refused, or returns "" when a callback may reach it.
func (g *Guard) forbidden(a netip.Addr) string {
	a = a.Unmap()
	for _, p := range g.allow {
		if p.Contains(a) {
			return ""
		}
	}
	for _, r := range forbiddenRanges {
		if r.prefix.Contains(a) {
			return r.what
		}
	}
	if v4, via, ok := embeddedIPv4(a); ok {
		if why := g.forbidden(v4); why != "" {
			return fmt.Sprintf("%s (%s %s)", why, via, v4)
		}
		return ""
	}
	if a.Is6() && !globalUnicast.Contains(a) {
		return "outside IPv6 global unicast (2000::/3)"
	}
	return ""
}

// forbiddenRanges are refused unless allowed. IPv4-mapped addresses are unmapped before the
// check, so the IPv4 entries cover them too.
var forbiddenRanges = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified (this network)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (CGNAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (cloud metadata)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},

	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible (deprecated)"},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "IPv4-translated"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("2001::/23"), "IETF protocol assignments (Teredo, benchmarking, ORCHID)"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("3fff::/20"), "documentation"},
	{netip.MustParsePrefix("fc00::/7"), "unique local (ULA)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local (deprecated)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

var (
	globalUnicast = netip.MustParsePrefix("2000::/3")
	nat64         = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour     = netip.MustParsePrefix("2002::/16")
)

// embeddedIPv4 returns the IPv4 address that a NAT64 or 6to4 address routes to.
func embeddedIPv4(a netip.Addr) (v4 netip.Addr, via string, ok bool) {
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), "NAT64 of", true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), "6to4 of", true
	}
	return netip.Addr{}, "", false
}

// DialContext connects like net.Dialer.DialContext, but only to addresses the Guard lets
// through: it resolves the host itself, refuses when any of its addresses is forbidden, dials
// the checked addresses one after another, and checks again the address each socket connects
// to. An error wraps ErrForbiddenAddress when the Guard refused.
func (g *Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("webhook: dialing %s %s: only TCP is allowed", network, address)
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("webhook: dialing %s: %w", address, err)
	}
	addrs, err := g.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{KeepAlive: 30 * time.Second, Control: g.control}
	var errs []error
	for _, a := range addrs {
		if (network == "tcp4" && !a.Unmap().Is4()) || (network == "tcp6" && a.Unmap().Is4()) {
			continue
		}
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	switch len(errs) {
	case 0:
		return nil, fmt.Errorf("webhook: dialing %s: no %s address", address, network)
	case 1:
		return nil, errs[0]
	}
	return nil, errors.Join(errs...)
}

// control checks the address a socket is about to connect to: the last word, whatever resolved it.
func (g *Guard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot check %q: %w", ErrForbiddenAddress, address, err)
	}
	return g.CheckAddr(ap.Addr())
}

// HTTPClient returns a new client for callbacks: it connects through DialContext, ignores
// proxy settings from the environment (a proxy would connect on the Guard's behalf, unchecked)
// and follows no redirects, returning the 3xx response instead. Each call makes a new transport
// with its own connection pool.
func (g *Guard) HTTPClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           g.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          100,
			MaxIdleConnsPerHost:   32,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
