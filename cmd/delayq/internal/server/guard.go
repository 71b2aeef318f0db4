package server

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"

	"github.com/delayq/delayq/cmd/delayq/internal/httpapi"
)

// guard puts the API and the dashboard behind httpapi.Guard: on a server without tokens, the
// Host check, on every server the cross-origin protection. It warns when the server has no
// tokens and listens beyond loopback: the Host check still applies there, so that a browser
// on any machine that reaches it cannot be turned against it by a rebound name, but every
// client that reaches it may read and change every job.
func guard(cfg *Config, h http.Handler, log *slog.Logger) (http.Handler, error) {
	if cfg.open() && !onLoopback(cfg.Listen) {
		log.Warn("this server has no API tokens and listens beyond loopback: every client that reaches it may read and change "+
			"every job; give it tokens (--auth-token), or --listen 127.0.0.1:7070. Browsers stay held off: it answers only "+
			"localhost, IP addresses, the --listen host and --allowed-host names (docs/security.md)", "listen", cfg.Listen)
	}
	var public []string
	if !cfg.open() && cfg.MetricsPublic {
		public = []string{"/metrics"} // served without a token: a rebound name must not read it
	}
	if !cfg.open() && !cfg.MetricsPublic && len(cfg.AllowedHosts) > 0 {
		log.Warn("--allowed-host has no effect on a server with API tokens: it answers every Host, and the tokens protect it")
	}
	g, err := httpapi.NewGuard(httpapi.GuardConfig{CheckHost: cfg.open(), Listen: cfg.Listen, AllowedHosts: cfg.AllowedHosts, PublicPaths: public}, h)
	if err != nil {
		return nil, fmt.Errorf("--allowed-host: %w", err)
	}
	return g, nil
}

// onLoopback reports whether listen, a --listen address, accepts connections from this
// machine only: its host is localhost or a loopback address. An empty host, 0.0.0.0 or ::
// listens on every interface.
func onLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}
