package archive

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrationFiles are the schema's versions, NNNN_what.sql, applied in order of NNNN.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the key of the advisory lock that lets one Open at a time migrate, so that
// servers starting together do not apply a version twice. Any constant works as long as no
// other application of the database takes the same key.
const migrationLock int64 = 0x64656c6179710001 // "delayq" then the archive's number

// migration is one schema version.
type migration struct {
	version int
	name    string // the file name
	sql     string
}

// migrations returns the embedded migrations in order of version; a name without a version
// prefix, or two files for one version, is an error.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	seen := map[int]string{}
	for _, name := range names {
		base := path.Base(name)
		prefix, _, _ := strings.Cut(base, "_")
		v, err := strconv.Atoi(prefix)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: the name does not start with a version number", base)
		}
		if other, ok := seen[v]; ok {
			return nil, fmt.Errorf("migrations %s and %s have the same version", other, base)
		}
		seen[v] = base
		data, err := migrationFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(data)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// migrate applies the migrations the database has not had yet, all in one transaction under
// the advisory lock: a failed one leaves the schema as it was, and a concurrent Open waits and
// then finds nothing to do. Versions the database has that this build does not know, from a
// newer delayq, are left alone.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	return apply(ctx, pool, ms)
}

// apply applies those of ms the database has not had yet, as migrate says.
func apply(ctx context.Context, pool *pgxpool.Pool, ms []migration) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// The lock comes first: two CREATE TABLE IF NOT EXISTS at once can both miss the
		// table and one then fails on the catalog's unique index.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLock); err != nil {
			return fmt.Errorf("locking the schema for migration: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS delayq_archive_schema (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("creating the schema version table: %w", err)
		}
		applied, err := appliedVersions(ctx, tx)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if applied[m.version] {
				continue
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO delayq_archive_schema (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
				return fmt.Errorf("recording migration %s: %w", m.name, err)
			}
		}
		return nil
	})
}

// appliedVersions returns the versions recorded in the schema version table.
func appliedVersions(ctx context.Context, tx pgx.Tx) (map[int]bool, error) {
	rows, err := tx.Query(ctx, "SELECT version FROM delayq_archive_schema")
	if err != nil {
		return nil, fmt.Errorf("reading the schema version: %w", err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, fmt.Errorf("reading the schema version: %w", err)
	}
	applied := make(map[int]bool, len(versions))
	for _, v := range versions {
		applied[int(v)] = true
	}
	return applied, nil
}
