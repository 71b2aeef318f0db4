package archive

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// withConn runs f on a connection of the pool, and again on another one when f failed because
// its connection was dead: after PostgreSQL restarts, every idle connection of the pool is, and
// each would otherwise fail one call. f must be safe to run twice, as a statement whose answer
// was lost with its connection may have taken effect; Insert and the deletes are, and so are
// reads. The tries are bounded by the pool's size: by then a new connection was made or failed.
func (s *Store) withConn(ctx context.Context, f func(*pgxpool.Conn) error) error {
	tries := int(s.pool.Config().MaxConns) + 1
	for try := 1; ; try++ {
		conn, err := s.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		err = f(conn)
		dead := err != nil && conn.Conn().IsClosed()
		conn.Release() // a closed connection leaves the pool
		if !dead || ctx.Err() != nil || try >= tries {
			return err
		}
	}
}
