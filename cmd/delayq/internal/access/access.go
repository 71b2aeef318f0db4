// Package access decides who may do what on delayq server: the API tokens and the principals
// they stand for (a name, a role and the topics it covers), the permission each kind of
// request needs, the tokens file, and the Limiter that slows down the guessing of tokens.
//
// A token is compared only through its SHA-256, in constant time against every configured one,
// so that neither the time taken nor a token_sha256 entry of the tokens file tells anything
// about the tokens.
package access

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
	"sync/atomic"
)

// MinTokenBytes is the shortest token delayq server accepts: 16 bytes leave guessing hopeless
// even at a thousand tries a second for as long as anyone will run the server.
const MinTokenBytes = 16

// CheckToken returns why tok cannot be a token, or nil. It never quotes the token.
func CheckToken(tok string) error {
	switch {
	case tok == "" || strings.ContainsAny(tok, " \t\r\n,"):
		return fmt.Errorf("a token must be non-empty, without white space or commas")
	case len(tok) < MinTokenBytes:
		return fmt.Errorf("a token of %d bytes is too short: want at least %d (openssl rand -hex 32 makes a good one)", len(tok), MinTokenBytes)
	}
	return nil
}

// Role is what a principal may do; Allows has the table.
type Role string

// The roles.
const (
	// Admin may do everything.
	Admin Role = "admin"
	// Reader may read everything, and change nothing.
	Reader Role = "reader"
	// Producer may enqueue jobs, get, cancel and reschedule them.
	Producer Role = "producer"
	// Consumer may reserve jobs, ack, nack, touch and release them, get them, and list, requeue
	// and delete dead letters.
	Consumer Role = "consumer"
)

// Principal is who a token is.
type Principal struct {
	// Name names it in logs and refusals; for a token given with --auth-token, its fingerprint.
	Name string
	Role Role
	// Topics are the topics it covers: names, or prefixes followed by "*". Empty covers all.
	Topics []string
	sum    [sha256.Size]byte
}

// NewPrincipal returns the principal of a token whose SHA-256 is sum.
func NewPrincipal(name string, role Role, topics []string, sum [sha256.Size]byte) *Principal {
	return &Principal{Name: name, Role: role, Topics: topics, sum: sum}
}

// Admins returns an admin principal for each token, named by its fingerprint: what
// --auth-token gives.
func Admins(tokens []string) ([]*Principal, error) {
	var ps []*Principal
	for i, tok := range tokens {
		if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
			return nil, fmt.Errorf("token %d is empty or has white space", i)
		}
		sum := sha256.Sum256([]byte(tok))
		ps = append(ps, NewPrincipal(Fingerprint(sum), Admin, nil, sum))
	}
	return ps, nil
}

// Fingerprint names a token in logs without giving it away: "token:" and the first 8 hex
// digits of its SHA-256, which `printf %s "$TOKEN" | sha256sum` shows.
func Fingerprint(sum [sha256.Size]byte) string { return "token:" + hex.EncodeToString(sum[:4]) }

// Fingerprint is the fingerprint of p's token.
func (p *Principal) Fingerprint() string { return Fingerprint(p.sum) }

// Covers reports whether topic is one of p's.
func (p *Principal) Covers(topic string) bool {
	if len(p.Topics) == 0 {
		return true
	}
	for _, pat := range p.Topics {
		if prefix, ok := strings.CutSuffix(pat, "*"); ok && strings.HasPrefix(topic, prefix) || pat == topic {
			return true
		}
	}
	return false
}

// Keyring holds the principals of a server's tokens; Set replaces them while requests read
// them. The zero Keyring has none: the server is open.
type Keyring struct {
	ps atomic.Pointer[[]*Principal]
}

// NewKeyring returns a Keyring of ps.
func NewKeyring(ps []*Principal) *Keyring {
	k := &Keyring{}
	k.Set(ps)
	return k
}

// Set replaces the principals.
func (k *Keyring) Set(ps []*Principal) { k.ps.Store(&ps) }

func (k *Keyring) all() []*Principal {
	if k == nil {
		return nil
	}
	if ps := k.ps.Load(); ps != nil {
		return *ps
	}
	return nil
}

// Open reports whether k has no tokens: then every request is served without one.
func (k *Keyring) Open() bool { return len(k.all()) == 0 }

// Lookup returns the principal of token, or nil. The token's SHA-256 is compared with every
// principal's, each in constant time.
func (k *Keyring) Lookup(token string) *Principal {
	token = strings.TrimSpace(token)
	if token == "" {
		return nil
	}
	got := sha256.Sum256([]byte(token))
	var found *Principal
	for _, p := range k.all() {
		if subtle.ConstantTimeCompare(got[:], p.sum[:]) == 1 {
			found = p
		}
	}
	return found
}

// ByFingerprint returns the principal whose token has fingerprint fp, or nil: a session names
// its token so, and ends when the token is removed or replaced.
func (k *Keyring) ByFingerprint(fp string) *Principal {
	for _, p := range k.all() {
		if p.Fingerprint() == fp {
			return p
		}
	}
	return nil
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p, the principal of its request.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalOf returns the principal ctx carries, or nil (an open server).
func PrincipalOf(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}
