package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// GuardConfig configures Guard.
type GuardConfig struct {
	// CheckHost serves only requests whose Host is a loopback name or an IP address, the host
	// of Listen, or one of AllowedHosts; the others get 403 permission_denied. Set it on a
	// server without API tokens: a web page whose name its attacker re-points at the server's
	// address (DNS rebinding) sends its own name as Host, and so is refused. With tokens,
	// they protect the server and any Host is served.
	CheckHost bool
	// Listen is the server's listen address, such as "127.0.0.1:7070" or "queue.internal:7070";
	// its host is allowed.
	Listen string
	// AllowedHosts are the other host names allowed, each with any port.
	AllowedHosts []string
	// PublicPaths are paths served without a token on a server with tokens (/metrics with
	// --metrics-public): the Host check applies to them even without CheckHost, since no token
	// keeps a rebound name's page from reading them.
	PublicPaths []string
}

// Guard is what every request of delayq server passes first, to the API and to the web
// dashboard alike:
//
//   - every answer says X-Content-Type-Options: nosniff;
//   - with CheckHost, the Host check (see GuardConfig.CheckHost), except on /healthz and
//     /readyz, which change nothing and tell only that the server is up, and which probes
//     reach by whatever name or address they were given;
//   - net/http's cross-origin protection: a POST, PUT, PATCH or DELETE that a browser sends
//     from a page of another origin (Sec-Fetch-Site, or else Origin against Host) gets 403
//     permission_denied, while clients that are not browsers (curl, the SDKs, the CLI), which
//     send neither header, and the dashboard's own pages are served as before;
//   - a request body that the handler left unread, as when it refused the request as too
//     large, is read and discarded after the answer is sent, up to lingerBytes and for at most
//     lingerTime, so that a client that writes its whole request before reading the answer
//     gets the answer instead of a reset connection.
type Guard struct {
	next   http.Handler
	check  bool
	public map[string]bool
	names  map[string]bool
	cop    *http.CrossOriginProtection
}

// NewGuard returns next behind a Guard.
func NewGuard(cfg GuardConfig, next http.Handler) (*Guard, error) {
	g := &Guard{next: next, check: cfg.CheckHost, public: map[string]bool{}, names: map[string]bool{"localhost": true}, cop: http.NewCrossOriginProtection()}
	for _, p := range cfg.PublicPaths {
		g.public[p] = true
	}
	if host := hostName(cfg.Listen); host != "" {
		g.names[host] = true
	}
	for _, h := range cfg.AllowedHosts {
		if err := CheckAllowedHost(h); err != nil {
			return nil, fmt.Errorf("httpapi: %w", err)
		}
		g.names[hostName(h)] = true
	}
	return g, nil
}

// CheckAllowedHost reports whether h can be an allowed host: a host name or an IP address,
// without a scheme, port or path.
func CheckAllowedHost(h string) error {
	if h == "" || strings.ContainsAny(h, "/:@ \t\r\n,*") && !isIP(h) {
		return fmt.Errorf("allowed host %q: want a host name, such as queue.internal, without a scheme, port, path or wildcard", h)
	}
	return nil
}

func isIP(h string) bool {
	_, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
	return err == nil
}

// hostName is the host of a Host header or a listen address, without its port, brackets or
// final dot, in lower case.
func hostName(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// hostAllowed reports whether a request with Host host may be served. An IP address always
// may: DNS rebinding needs a name, and a browser page whose address is the Host is the
// server's own. So may no Host at all, which no browser sends.
func (g *Guard) hostAllowed(host string) bool {
	name := hostName(host)
	if name == "" || g.names[name] {
		return true
	}
	_, err := netip.ParseAddr(name)
	return err == nil
}

// Lingering on an unread request body: at most this much is read, for at most this long.
// Both bound the work a refused request can cost; the byte bound covers a batch somewhat over
// its default limit of 32 MiB.
const (
	lingerBytes = 64 << 20
	lingerTime  = 5 * time.Second
)

// ServeHTTP checks r and serves it with the guarded handler, or refuses it.
func (g *Guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if g.check && r.URL.Path != "/healthz" && r.URL.Path != "/readyz" && !g.hostAllowed(r.Host) {
		refuse(w, fmt.Sprintf("this server has no API tokens and answers only its loopback names, IP addresses and the names it is given, not Host %q: "+
			"start it with --allowed-host %s (or $DELAYQ_ALLOWED_HOSTS) to allow that name, or with API tokens", r.Host, hostName(r.Host)))
		return
	}
	if !g.check && g.public[r.URL.Path] && !g.hostAllowed(r.Host) {
		refuse(w, fmt.Sprintf("%s is served without a token, and so only to its loopback names, IP addresses and the names it is given, not Host %q: "+
			"start the server with --allowed-host %s (or $DELAYQ_ALLOWED_HOSTS) to allow that name", r.URL.Path, r.Host, hostName(r.Host)))
		return
	}
	if err := g.cop.Check(r); err != nil {
		refuse(w, fmt.Sprintf("%s %s from a browser page of another origin is refused (%v): pages of other sites may not change this server; "+
			"use the dashboard on this server, or a client that is not a browser", r.Method, r.URL.Path, err))
		return
	}
	if r.Body == nil || r.Body == http.NoBody || r.ProtoMajor != 1 || r.Header.Get("Expect") != "" {
		// HTTP/2 ends an unread body's stream without closing the connection; a client that
		// waits for 100 Continue sends no body after the answer.
		g.next.ServeHTTP(w, r)
		return
	}
	body := &bodyEnd{ReadCloser: r.Body}
	r2 := *r // the server's own request keeps its body, which it checks after the handler
	r2.Body = body
	g.next.ServeHTTP(w, &r2)
	if !body.done && r.ContentLength <= lingerBytes {
		linger(w, r.Body)
	}
}

// refuse writes the API's error body for 403 permission_denied.
func refuse(w http.ResponseWriter, msg string) {
	body, err := apiv1.Marshal(apiv1.ErrorResponse{Error: apiv1.Error{Code: codePermission, Message: msg}})
	if err != nil {
		body = []byte(internalErrorBody)
	}
	body = append(body, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusForbidden)
	_, _ = w.Write(body)
}

// linger sends the answer, then reads and discards what is left of body (see Guard).
func linger(w http.ResponseWriter, body io.Reader) {
	rc := http.NewResponseController(w)
	if rc.Flush() != nil || rc.SetReadDeadline(time.Now().Add(lingerTime)) != nil {
		return
	}
	_, err := io.CopyN(io.Discard, body, lingerBytes)
	if errors.Is(err, io.EOF) {
		// The connection may serve another request, under the server's own deadlines. Cut
		// short, the deadline stays: the server closes the connection, which it then knows
		// still holds unread bytes, without waiting on the client.
		_ = rc.SetReadDeadline(time.Time{})
	}
}

// bodyEnd is a request body that remembers whether the handler read it to its end.
type bodyEnd struct {
	io.ReadCloser
	done bool
}

func (b *bodyEnd) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.done = true
	}
	return n, err
}
