package access

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/testwait"
)

func TestTokensFileReloadsOnHangupAndKeepsTheOldOnABadFile(t *testing.T) {
	t.Parallel()
	const first, second = "first-token-000000001", "second-token-00000001"
	path := filepath.Join(t.TempDir(), "tokens.json")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"tokens": [{"name": "one", "token": "` + first + `", "role": "admin"}]}`)
	static, _ := Admins([]string{"static-token-00000001"})
	f, err := OpenTokensFile(path, static)
	if err != nil {
		t.Fatal(err)
	}
	k := f.Keyring()
	if k.Lookup(first) == nil || k.Lookup("static-token-00000001") == nil {
		t.Fatal("the file's and the static token are not both in the keyring")
	}
	var logs testwait.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	hup := make(chan os.Signal, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx, time.Hour, hup, log) }()
	t.Cleanup(func() { cancel(); <-done })

	write(`{"tokens": [{"name": "two", "token": "` + second + `", "role": "reader"}]}`)
	hup <- syscall.SIGHUP
	testwait.For(t, 10*time.Second, "the reload", func() bool { return k.Lookup(second) != nil })
	if k.Lookup(first) != nil || k.Lookup("static-token-00000001") == nil {
		t.Error("after the reload: the removed token is still there, or the static one is gone")
	}
	write(`{"tokens": [{"name": "three", "token": "tiny-tok", "role": "reader"}]}`)
	hup <- syscall.SIGHUP
	testwait.For(t, 10*time.Second, "the failed reload's log line", func() bool {
		return strings.Contains(logs.String(), "the tokens file was not reloaded")
	})
	if k.Lookup(second) == nil {
		t.Error("a bad file replaced the tokens in use")
	}
	if strings.Contains(logs.String(), second) || strings.Contains(logs.String(), "tiny-tok") {
		t.Errorf("a token is logged:\n%s", logs.String())
	}
}

// A token replaced by another of the same length, in a file whose modification time did not
// move (a file system that keeps whole seconds, a copy that keeps the time), stops working at
// the next look all the same: the file's contents are what counts. A bad file is logged once.
func TestTokensFileReloadsAChangeThatKeepsSizeAndTime(t *testing.T) {
	t.Parallel()
	const old, replacement = "old-token-00000000001", "new-token-00000000001"
	path := filepath.Join(t.TempDir(), "tokens.json")
	// Each version of the file appears whole, renamed into place: a file the watcher could
	// catch half written would count as one more bad file.
	write := func(content string, mod time.Time) {
		t.Helper()
		if err := os.WriteFile(path+".new", []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	mod := time.Now().Add(-time.Hour).Truncate(time.Second)
	write(`{"tokens": [{"name": "one", "token": "`+old+`", "role": "admin"}]}`, mod)
	f, err := OpenTokensFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := f.Keyring()
	var logs testwait.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx, 10*time.Millisecond, nil, log) }()
	t.Cleanup(func() { cancel(); <-done })

	write(`{"tokens": [{"name": "one", "token": "`+replacement+`", "role": "admin"}]}`, mod)
	testwait.For(t, 10*time.Second, "the replaced token to stop working", func() bool {
		return k.Lookup(old) == nil && k.Lookup(replacement) != nil
	})
	write(`{"tokens": [{"name": "one", "token": "`+replacement+`", "role": "admin"}]]`, mod)
	time.Sleep(200 * time.Millisecond)
	if n := strings.Count(logs.String(), "the tokens file was not reloaded"); n != 1 {
		t.Errorf("a bad file logged %d times, want once:\n%s", n, logs.String())
	}
	if k.Lookup(replacement) == nil {
		t.Error("a bad file replaced the tokens in use")
	}
}
