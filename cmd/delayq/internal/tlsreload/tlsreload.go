// Package tlsreload serves a certificate and key pair from their files and takes a new pair
// when the files change, so that a certificate is rotated without a restart.
package tlsreload

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// checkEvery is how often a handshake looks whether the files changed.
const checkEvery = time.Second

// Pair is a certificate and its key, read from two files and read again when either changes.
type Pair struct {
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	stamps  [2]stamp // of the files the pair in use was read from
	failed  [2]stamp // of the files that last failed to load, logged once
	checked time.Time
}

// stamp is what a look at a file compares.
type stamp struct {
	mod  time.Time
	size int64
}

// Load reads the pair at certFile and keyFile; log hears of each new pair, and of each that
// could not be read (the pair in use then stays). Nil log: slog.Default().
func Load(certFile, keyFile string, log *slog.Logger) (*Pair, error) {
	if log == nil {
		log = slog.Default()
	}
	p := &Pair{certFile: certFile, keyFile: keyFile, log: log}
	stamps, err := p.stat()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	p.cert, p.stamps, p.checked = &cert, stamps, time.Now()
	return p, nil
}

func (p *Pair) stat() ([2]stamp, error) {
	var s [2]stamp
	for i, path := range []string{p.certFile, p.keyFile} {
		st, err := os.Stat(path)
		if err != nil {
			return s, fmt.Errorf("TLS: %w", err)
		}
		s[i] = stamp{st.ModTime(), st.Size()}
	}
	return s, nil
}

// GetCertificate returns the pair in use, having first read the files again if they changed
// since the pair was read: a tls.Config's GetCertificate.
func (p *Pair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if now := time.Now(); now.Sub(p.checked) >= checkEvery {
		p.checked = now
		p.reload()
	}
	return p.cert, nil
}

// reload reads the pair again when its files changed; a pair that does not load (a key not yet
// written beside its new certificate) leaves the one in use, to be tried again at the next
// look. The caller holds p.mu.
func (p *Pair) reload() {
	stamps, err := p.stat()
	if err != nil || stamps == p.stamps || stamps == p.failed {
		return
	}
	cert, err := tls.LoadX509KeyPair(p.certFile, p.keyFile)
	if err != nil {
		p.failed = stamps
		p.log.Warn("the TLS certificate files changed but do not load: the certificate in use stays", "cert", p.certFile, "key", p.keyFile, "err", err)
		return
	}
	p.cert, p.stamps = &cert, stamps
	p.log.Info("loaded a new TLS certificate", "cert", p.certFile)
}

// Config returns a server's TLS configuration serving p: TLS 1.2 at least.
func (p *Pair) Config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: p.GetCertificate}
}
