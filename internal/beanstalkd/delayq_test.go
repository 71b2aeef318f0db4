package beanstalkd

import (
	"log/slog"
	"testing"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/delayqtest"
	"github.com/delayq/delayq/internal/beanstalkd/backend"
)

// newDelayqBackend returns the delayq Backend on a Client of a redis-server of its own.
func newDelayqBackend(t *testing.T) *backend.Backend {
	t.Helper()
	return backend.New(delayqtest.NewClient(t, delayq.Config{}), slog.New(slog.DiscardHandler))
}
