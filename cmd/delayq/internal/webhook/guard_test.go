package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/delayq/delayq"
)

// fakeResolver answers from a table, counts its lookups, and never touches the network.
// When next is set, every lookup after the first answers with it instead (DNS rebinding).
type fakeResolver struct {
	mu    sync.Mutex
	hosts map[string][]netip.Addr
	next  []netip.Addr
	calls int
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.next != nil && r.calls > 1 {
		return r.next, nil
	}
	if a, ok := r.hosts[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *fakeResolver) lookups() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

func addrs(s ...string) []netip.Addr {
	out := make([]netip.Addr, len(s))
	for i, a := range s {
		out[i] = netip.MustParseAddr(a)
	}
	return out
}

func prefixes(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, p := range s {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	hosts := map[string][]netip.Addr{
		"public.test":   addrs("93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"),
		"mixed.test":    addrs("93.184.216.34", "10.1.2.3"),
		"internal.test": addrs("fd12::1"),
		"empty.test":    {},
	}
	internal := prefixes("127.0.0.0/8", "::1/128", "10.0.0.0/8", "169.254.0.0/16", "100.64.0.0/10", "fd00::/8")
	tests := []struct {
		url     string
		allow   []netip.Prefix
		want    error  // nil: allowed
		wantMsg string // part of the error text: the address refused
	}{
		// Refused by default, allowed when the operator allows the range.
		{url: "http://10.0.0.1/", want: ErrForbiddenAddress, wantMsg: "10.0.0.1 is private"},
		{url: "http://10.0.0.1/", allow: internal},
		{url: "http://169.254.169.254/latest/meta-data", want: ErrForbiddenAddress, wantMsg: "169.254.169.254 is link-local"},
		{url: "http://169.254.169.254/latest/meta-data", allow: internal},
		{url: "http://[::1]/", want: ErrForbiddenAddress, wantMsg: "::1 is loopback"},
		{url: "http://[::1]/", allow: internal},
		{url: "http://[::ffff:127.0.0.1]/", want: ErrForbiddenAddress, wantMsg: "127.0.0.1 is loopback"},
		{url: "http://[::ffff:127.0.0.1]/", allow: internal},
		{url: "http://[::ffff:127.0.0.1]/", allow: prefixes("::ffff:127.0.0.0/104")},
		{url: "http://100.64.0.1/", want: ErrForbiddenAddress, wantMsg: "100.64.0.1 is shared address space"},
		{url: "http://100.64.0.1/", allow: internal},
		{url: "http://[fd00::1]/", want: ErrForbiddenAddress, wantMsg: "fd00::1 is unique local"},
		{url: "http://[fd00::1]/", allow: internal},
		{url: "http://localhost:8080/x", want: ErrForbiddenAddress, wantMsg: "localhost resolves to"},
		{url: "http://localhost:8080/x", allow: internal},
		{url: "http://internal.test/", want: ErrForbiddenAddress, wantMsg: "internal.test resolves to fd12::1"},
		{url: "http://internal.test/", allow: internal},
		// More of the ranges callbacks must not reach.
		{url: "http://127.1.2.3:9/", want: ErrForbiddenAddress, wantMsg: "loopback"},
		{url: "http://0.0.0.0/", want: ErrForbiddenAddress, wantMsg: "unspecified"},
		{url: "http://[::]/", want: ErrForbiddenAddress, wantMsg: "unspecified"},
		{url: "http://172.16.5.4/", want: ErrForbiddenAddress, wantMsg: "private"},
		{url: "http://192.168.1.1/", want: ErrForbiddenAddress, wantMsg: "private"},
		{url: "http://224.0.0.1/", want: ErrForbiddenAddress, wantMsg: "multicast"},
		{url: "http://[ff02::1]/", want: ErrForbiddenAddress, wantMsg: "multicast"},
		{url: "http://255.255.255.255/", want: ErrForbiddenAddress, wantMsg: "broadcast"},
		{url: "http://240.0.0.1/", want: ErrForbiddenAddress, wantMsg: "reserved"},
		{url: "http://192.0.0.170/", want: ErrForbiddenAddress, wantMsg: "IETF"},
		{url: "http://198.18.0.1/", want: ErrForbiddenAddress, wantMsg: "benchmarking"},
		{url: "http://[fe80::1%25eth0]/", want: ErrForbiddenAddress, wantMsg: "fe80::1 is link-local"},
		{url: "http://[64:ff9b::7f00:1]/", want: ErrForbiddenAddress, wantMsg: "NAT64 of 127.0.0.1"},
		{url: "http://[64:ff9b::a9fe:a9fe]/", want: ErrForbiddenAddress, wantMsg: "NAT64 of 169.254.169.254"},
		{url: "http://[2002:a00:1::1]/", want: ErrForbiddenAddress, wantMsg: "6to4 of 10.0.0.1"},
		{url: "http://[::127.0.0.1]/", want: ErrForbiddenAddress, wantMsg: "IPv4-compatible"},
		{url: "http://[2001:db8::1]/", want: ErrForbiddenAddress, wantMsg: "documentation"},
		{url: "http://[100::1]/", want: ErrForbiddenAddress, wantMsg: "discard"},
		{url: "http://mixed.test/", want: ErrForbiddenAddress, wantMsg: "mixed.test resolves to 10.1.2.3"},
		// Public addresses pass (none of them is dialled).
		{url: "http://93.184.216.34/"},
		{url: "https://public.test:8443/hook?x=1"},
		{url: "https://[2606:4700:4700::1111]/"},
		{url: "http://[64:ff9b::5db8:d822]/"},
		{url: "http://[2002:5db8:d822::1]/"},
		// Not callback URLs at all.
		{url: "ftp://93.184.216.34/", want: ErrInvalidURL},
		{url: "javascript:alert(1)", want: ErrInvalidURL},
		{url: "http:///path", want: ErrInvalidURL},
		{url: "http://%zz/", want: ErrInvalidURL},
		{url: "http://nowhere.test/", want: ErrInvalidURL, wantMsg: "no such host"},
		{url: "http://empty.test/", want: ErrInvalidURL, wantMsg: "no addresses"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			r := &fakeResolver{hosts: hosts}
			opts := []GuardOption{WithResolver(r)}
			if strings.Contains(tt.url, "localhost") {
				opts = nil // the system resolver: localhost comes from the hosts file
			}
			err := NewGuard(tt.allow, opts...).CheckURL(context.Background(), tt.url)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("CheckURL: %v, want nil", err)
				}
			} else {
				if !errors.Is(err, tt.want) {
					t.Fatalf("CheckURL = %v, want %v", err, tt.want)
				}
				if !errors.Is(err, delayq.ErrInvalid) {
					t.Errorf("CheckURL = %v, which does not match delayq.ErrInvalid", err)
				}
				if !strings.Contains(err.Error(), tt.wantMsg) {
					t.Errorf("CheckURL = %q, want it to say %q", err, tt.wantMsg)
				}
			}
			if u, err := url.Parse(tt.url); err == nil && isIPLiteral(u.Hostname()) {
				if n := r.lookups(); n != 0 {
					t.Errorf("an IP literal was looked up %d times", n)
				}
			}
		})
	}
}

func isIPLiteral(host string) bool {
	_, err := netip.ParseAddr(host)
	return err == nil
}

func TestGuardControlChecksTheConnectedAddress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		address string
		allow   []netip.Prefix
		refused bool
	}{
		{"127.0.0.1:80", nil, true},
		{"127.0.0.1:80", allowLoopback, false},
		{"[::ffff:10.0.0.1]:443", nil, true},
		{"[::1]:80", allowLoopback, true},
		{"169.254.169.254:80", nil, true},
		{"93.184.216.34:443", nil, false},
		{"not-an-address", nil, true},
	}
	for _, tt := range tests {
		err := NewGuard(tt.allow).control("tcp", tt.address, nil)
		if refused := errors.Is(err, ErrForbiddenAddress); refused != tt.refused {
			t.Errorf("control(%q) with allow %v = %v, want refused %v", tt.address, tt.allow, err, tt.refused)
		}
	}
}

func TestGuardDialContext(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ctx := testContext(t)

	t.Run("loopback refused", func(t *testing.T) {
		_, err := NewGuard(nil).DialContext(ctx, "tcp", ln.Addr().String())
		if !errors.Is(err, ErrForbiddenAddress) {
			t.Fatalf("DialContext = %v, want ErrForbiddenAddress", err)
		}
	})
	t.Run("loopback allowed", func(t *testing.T) {
		c, err := NewGuard(allowLoopback).DialContext(ctx, "tcp", ln.Addr().String())
		if err != nil {
			t.Fatalf("DialContext: %v", err)
		}
		c.Close()
	})
	t.Run("name resolved by the guard", func(t *testing.T) {
		r := &fakeResolver{hosts: map[string][]netip.Addr{"receiver.test": addrs("127.0.0.1")}}
		c, err := NewGuard(allowLoopback, WithResolver(r)).DialContext(ctx, "tcp", net.JoinHostPort("receiver.test", port))
		if err != nil {
			t.Fatalf("DialContext: %v", err)
		}
		c.Close()
	})
	t.Run("DNS rebinding", func(t *testing.T) {
		// Public when the URL is checked, loopback when it is dialled.
		r := &fakeResolver{hosts: map[string][]netip.Addr{"rebind.test": addrs("93.184.216.34")}, next: addrs("127.0.0.1")}
		g := NewGuard(nil, WithResolver(r))
		if err := g.CheckURL(ctx, "http://rebind.test:"+port+"/"); err != nil {
			t.Fatalf("CheckURL: %v", err)
		}
		_, err := g.DialContext(ctx, "tcp", net.JoinHostPort("rebind.test", port))
		if !errors.Is(err, ErrForbiddenAddress) || !strings.Contains(err.Error(), "127.0.0.1") {
			t.Fatalf("DialContext = %v, want ErrForbiddenAddress naming 127.0.0.1", err)
		}
	})
	t.Run("UDP refused", func(t *testing.T) {
		if _, err := NewGuard(allowLoopback).DialContext(ctx, "udp", ln.Addr().String()); err == nil {
			t.Fatal("DialContext(udp) succeeded")
		}
	})
}

func TestHTTPClient(t *testing.T) {
	t.Parallel()
	c := NewGuard(nil).HTTPClient()
	tr, ok := c.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("Transport is %T", c.Transport)
	}
	if tr.Proxy != nil {
		t.Error("the transport takes a proxy (from the environment)")
	}
	if err := c.CheckRedirect(nil, nil); !errors.Is(err, http.ErrUseLastResponse) {
		t.Errorf("CheckRedirect = %v, want http.ErrUseLastResponse", err)
	}
}

// FuzzGuardAddr checks the Guard against netip's own classification: whatever netip calls
// loopback, private, link-local, multicast or unspecified is refused, and an IPv4-mapped
// address is judged as the IPv4 address it carries.
func FuzzGuardAddr(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::7f00:1", "2002:c0a8:101::", "fe80::1", "8.8.8.8", "2606:4700::1111"} {
		b := netip.MustParseAddr(s).As16()
		f.Add(b[:])
	}
	g := NewGuard(nil)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) != 16 {
			return
		}
		a := netip.AddrFrom16([16]byte(raw))
		err := g.CheckAddr(a)
		u := a.Unmap()
		if (err == nil) != (g.CheckAddr(u) == nil) {
			t.Fatalf("%s and %s are judged differently", a, u)
		}
		special := u.IsLoopback() || u.IsPrivate() || u.IsLinkLocalUnicast() || u.IsLinkLocalMulticast() ||
			u.IsInterfaceLocalMulticast() || u.IsMulticast() || u.IsUnspecified()
		if special && err == nil {
			t.Fatalf("%s passed the guard", a)
		}
		if v4, _, ok := embeddedIPv4(u); ok && g.CheckAddr(v4) != nil && err == nil {
			t.Fatalf("%s carries %s, which is refused, and passed", a, v4)
		}
	})
}
