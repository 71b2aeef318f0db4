package access

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"os"
	"time"
)

// TokensFile keeps a Keyring in step with a tokens file, besides the static principals of
// --auth-token: it reads the file again when told to (SIGHUP) and when its modification time
// or size changes. A file that cannot be read or parsed leaves the Keyring as it was, and the
// reason is logged.
type TokensFile struct {
	path    string
	static  []*Principal
	keyring *Keyring

	stamp fileStamp
	sum   [sha256.Size]byte // of the contents in use
}

// fileStamp is what a poll compares.
type fileStamp struct {
	mod  time.Time
	size int64
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
	st, err := os.Stat(f.path)
	if err != nil {
		return false, err
	}
	ps, data, err := ReadFile(f.path)
	f.stamp = fileStamp{st.ModTime(), st.Size()}
	if err != nil {
		return false, err
	}
	sum := sha256.Sum256(data)
	if sum == f.sum {
		return false, nil
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

// Run reloads the file on each value of hup and when a poll every interval sees it changed,
// until ctx ends, and logs each reload and each failed one to log.
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
			st, err := os.Stat(f.path)
			if err == nil && (fileStamp{st.ModTime(), st.Size()}) == f.stamp {
				continue
			}
			why = "the file changed"
		}
		changed, err := f.load()
		switch {
		case err != nil:
			log.Error("the tokens file was not reloaded: the tokens in use stay", "path", f.path, "why", why, "err", err)
		case changed:
			log.Info("the tokens file was reloaded", "path", f.path, "why", why, "tokens", len(f.keyring.all()))
		}
	}
}
