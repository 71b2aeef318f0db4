package access

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// TokensFile keeps a Keyring in step with a tokens file, besides the static principals of
// --auth-token: it reads the file again when told to (SIGHUP) and at each poll, and takes it
// when its contents changed; its modification time and size are not trusted to say so, as a
// file system may keep whole seconds and a copy may keep the time. A file that cannot be read
// or parsed leaves the Keyring as it was, and the reason is logged, once for the same reason.
type TokensFile struct {
	path    string
	static  []*Principal
	keyring *Keyring

	sum    [sha256.Size]byte // of the contents in use
	failed string            // why the last load failed, "" when it did not
}

// OpenTokensFile reads the tokens file at path and returns it with a Keyring of its principals
// and static's; an error refuses the start-up.
func OpenTokensFile(path string, static []*Principal) (*TokensFile, error) {
	f := &TokensFile{path: path, static: static, keyring: NewKeyring(static)}
	if _, err := f.load(); err != nil {
		return nil, err
	}
	return f, nil
}

// Keyring is the Keyring the file keeps.
func (f *TokensFile) Keyring() *Keyring { return f.keyring }

// Reload reads the file again now, and reports whether its tokens changed. It is not to be
// called while Run runs, which reloads on its own.
func (f *TokensFile) Reload() (bool, error) { return f.load() }

func (f *TokensFile) load() (bool, error) {
	data, err := readBounded(f.path)
	if err != nil {
		return false, err
	}
	sum := sha256.Sum256(data)
	if sum == f.sum {
		return false, nil
	}
	ps, err := ParseFile(data)
	if err != nil {
		return false, fmt.Errorf("%s: %w", f.path, err)
	}
	all := append(append([]*Principal(nil), f.static...), ps...)
	seen := map[string]bool{}
	for _, p := range all {
		if seen[p.Fingerprint()] {
			return false, errors.New(f.path + ": a token of the file is also an --auth-token, or shares its fingerprint")
		}
		seen[p.Fingerprint()] = true
	}
	f.sum = sum
	f.keyring.Set(all)
	return true, nil
}

// Run reloads the file on each value of hup and at a poll every interval, until ctx ends, and
// logs each reload, and each failed one (a poll only when the reason is new), to log.
func (f *TokensFile) Run(ctx context.Context, interval time.Duration, hup <-chan os.Signal, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		why := ""
		select {
		case <-ctx.Done():
			return
		case <-hup:
			why = "SIGHUP"
		case <-t.C:
			why = "the file changed"
		}
		changed, err := f.load()
		switch {
		case err != nil:
			if why == "SIGHUP" || err.Error() != f.failed {
				log.Error("the tokens file was not reloaded: the tokens in use stay", "path", f.path, "why", why, "err", err)
			}
			f.failed = err.Error()
		case changed:
			f.failed = ""
			log.Info("the tokens file was reloaded", "path", f.path, "why", why, "tokens", len(f.keyring.all()))
		default:
			f.failed = ""
		}
	}
}
