package delayq

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/redistest"
)

func TestNewWarnsAboutSettingsThatLoseJobs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts []redistest.Option
		want []string
	}{
		{"no persistence", nil, []string{"neither AOF nor RDB"}},
		{"eviction", []redistest.Option{redistest.WithAppendOnly("everysec"), redistest.WithArgs("--maxmemory-policy", "allkeys-lru")}, []string{"maxmemory-policy is not noeviction"}},
		{"safe", []redistest.Option{redistest.WithAppendOnly("always")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			rdb := redistest.Standalone(t, tt.opts...).Client(t)
			newClientOn(t, rdb, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			for _, w := range tt.want {
				if !strings.Contains(logs.String(), w) {
					t.Errorf("logs %q lack %q", logs.String(), w)
				}
			}
			if tt.want == nil && logs.Len() > 0 {
				t.Errorf("warnings for a safe server: %s", logs.String())
			}
		})
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t).Client(t)
	for _, cfg := range []Config{
		{Namespace: "a{b}"}, {Namespace: "has space"}, {Partitions: -1}, {Partitions: 1025},
		{PollInterval: -1}, {RecheckInterval: -1}, {BulkLimit: -5},
	} {
		if _, err := New(testContext(t), rdb, cfg); err == nil {
			t.Errorf("New(%+v) accepted a bad config", cfg)
		}
	}
	if _, err := New(testContext(t), nil, Config{}); err == nil {
		t.Error("New(nil client) succeeded")
	}
}

func TestCloseWhileConsumersWait(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{Partitions: 3})
	ctx := testContext(t)
	done := make(chan error, 8)
	for i := range 8 {
		go func() {
			_, err := c.Reserve(ctx, fmt.Sprint("t", i), ReserveOptions{Wait: 200 * time.Millisecond})
			done <- err
		}()
	}
	c.Close()
	for range 8 {
		if err := <-done; err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("Reserve racing Close = %v", err)
		}
	}
	if _, err := c.Reserve(ctx, "t", ReserveOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Reserve after Close = %v, want ErrClosed", err)
	}
}
