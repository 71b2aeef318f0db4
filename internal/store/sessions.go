package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/keys"
)

// dashboardKeyBytes is the size of the dashboard's signing key.
const dashboardKeyBytes = 32

// DashboardKey returns the key that signs the dashboard's sessions, making it when the
// namespace has none yet; every server of a deployment gets the same.
func (s *Store) DashboardKey(ctx context.Context) ([]byte, error) {
	key := keys.DashboardKey(s.ns)
	fresh := make([]byte, dashboardKeyBytes)
	_, _ = rand.Read(fresh) // never fails (crypto/rand)
	if err := s.rdb.SetNX(ctx, key, fresh, 0).Err(); err != nil {
		return nil, fmt.Errorf("making the dashboard's key: %w", err)
	}
	got, err := s.rdb.Get(ctx, key).Bytes()
	if err != nil {
		return nil, fmt.Errorf("reading the dashboard's key: %w", err)
	}
	if len(got) < dashboardKeyBytes {
		return nil, fmt.Errorf("the dashboard's key %s is %d bytes, want %d: delete it to make a new one", key, len(got), dashboardKeyBytes)
	}
	return got, nil
}

// RevokeSession marks dashboard session id as logged out until it would have ended.
func (s *Store) RevokeSession(ctx context.Context, id string, until time.Time) error {
	if !time.Now().Before(until) {
		return nil
	}
	err := s.rdb.SetArgs(ctx, keys.RevokedSession(s.ns, id), "1", redis.SetArgs{ExpireAt: until}).Err()
	if err != nil {
		return fmt.Errorf("revoking a dashboard session: %w", err)
	}
	return nil
}

// SessionRevoked reports whether dashboard session id has logged out.
func (s *Store) SessionRevoked(ctx context.Context, id string) (bool, error) {
	n, err := s.rdb.Exists(ctx, keys.RevokedSession(s.ns, id)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("looking up a dashboard session: %w", err)
	}
	return n > 0, nil
}
