package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/echogate/echogate/internal/lazyre"
)

//go:embed migrations/*.sql
var embeddedMigrations embed.FS

// migration is one numbered schema change, applied in its own transaction (unless its first line
// is the noTxMarker, for statements such as CREATE INDEX CONCURRENTLY).
type migration struct {
	version int
	name    string // file name without extension, e.g. "0001_vector"
	sql     string
	noTx    bool
}

// noTxMarker, as the first line of a migration file, runs it outside a transaction. Such a
// migration must be idempotent (IF NOT EXISTS …): a crash can leave it half applied.
const noTxMarker = "-- echogate:no-transaction"

var migrationName = lazyre.New(`^([0-9]{4})_([a-z0-9_]+)\.sql$`)

// loadMigrations reads dir of fsys: files named NNNN_name.sql, numbered 1, 2, 3… without gaps.
func loadMigrations(fsys fs.FS, dir string) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %q: name must look like 0001_short_name.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		body, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read migration %q: %w", e.Name(), err)
		}
		text := string(body)
		ms = append(ms, migration{
			version: v,
			name:    strings.TrimSuffix(e.Name(), ".sql"),
			sql:     text,
			noTx:    strings.HasPrefix(text, noTxMarker),
		})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %q: version %d, want %d (versions start at 1 and have no gaps or duplicates)", m.name, m.version, i+1)
		}
	}
	return ms, nil
}

var builtinMigrations = sync.OnceValues(func() ([]migration, error) {
	return loadMigrations(embeddedMigrations, "migrations")
})

// migrationsTable records applied migrations. It is not called schema_migrations because other
// tools (golang-migrate, …) use that name with another shape, and a schema may be shared.
const migrationsTable = "echogate_migrations"

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS ` + migrationsTable + ` (
    version    integer     NOT NULL PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL
)`

// migrateLockSQL takes the advisory lock that serializes Migrate across processes and replicas.
// It is one lock for the whole database (not per schema), because CREATE EXTENSION and
// CREATE SCHEMA race across schemas too.
const (
	migrateLockSQL   = `SELECT pg_advisory_lock(hashtextextended('echogate:migrate', 0))`
	migrateUnlockSQL = `SELECT pg_advisory_unlock(hashtextextended('echogate:migrate', 0))`
)

// Migrate applies the embedded migrations the database does not have yet, in order, each in its
// own transaction together with its row in echogate_migrations. It is idempotent and safe to call
// at every start, also from several replicas at once: all of it runs under a session-level
// pg_advisory_lock, so a second caller waits for the first and then finds the work done.
//
// It blocks while another process holds the migration lock; cancelling ctx stops waiting, or
// rolls back the migration in progress. A database migrated by a newer binary fails with
// ErrSchemaTooNew and is left untouched. After applying anything it resets the connection pool,
// so that new connections see the new schema and register the pgvector types.
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := builtinMigrations()
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	return s.migrate(ctx, ms)
}

func (s *Store) migrate(ctx context.Context, ms []migration) error {
	p, err := s.pool(ctx, "migrate")
	if err != nil {
		return err
	}
	conn, err := p.Acquire(ctx)
	if err != nil {
		return fail(ctx, err, "migrate %s: acquire connection", s.target)
	}
	defer conn.Release()
	if s.pooled {
		return s.migratePooled(ctx, p, conn, ms)
	}
	if _, err := conn.Exec(ctx, migrateLockSQL); err != nil {
		// The lock may have been granted just as ctx ended: closing the connection releases it.
		closeConn(conn)
		return fail(ctx, err, "migrate %s: take migration lock", s.target)
	}
	applied, err := s.migrateLocked(ctx, conn, ms)
	// Unlock even when ctx has ended, but not forever: a connection that cannot unlock is closed,
	// which releases the lock server-side.
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, uerr := conn.Exec(uctx, migrateUnlockSQL); uerr != nil {
		s.log.Warn("postgres: release migration lock failed; closing the connection", "target", s.target, "err", uerr)
		closeConn(conn)
	}
	if applied > 0 {
		// Connections made before the schema changed may have cached statements or lack the
		// pgvector types: replace them all (in-use ones are closed when released).
		p.Reset()
	}
	return err
}

// migrateXactLockSQL is migrateLockSQL's transaction-scoped form, on the same key.
const migrateXactLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended('echogate:migrate', 0))`

// migratePooled is migrate through a transaction pooler: the lock is held by a transaction of its
// own (a pooler keeps one server connection for an open transaction), on a second connection,
// while conn applies the migrations; rolling that transaction back releases the lock, and so does
// the server when the connection is lost.
func (s *Store) migratePooled(ctx context.Context, p *pgxpool.Pool, conn *pgxpool.Conn, ms []migration) error {
	holder, err := p.Begin(ctx)
	if err != nil {
		return fail(ctx, err, "migrate %s: begin the migration lock's transaction", s.target)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := holder.Rollback(rctx); err != nil {
			s.log.Warn("postgres: release migration lock failed; the server releases it with the connection", "target", s.target, "err", err)
		}
	}()
	if _, err := holder.Exec(ctx, migrateXactLockSQL); err != nil {
		return fail(ctx, err, "migrate %s: take migration lock", s.target)
	}
	applied, err := s.migrateLocked(ctx, conn, ms)
	if applied > 0 {
		p.Reset()
	}
	return err
}

// closeConn closes the underlying connection; releasing it to the pool then destroys it.
func closeConn(c *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.Conn().Close(ctx)
}

// migrateLocked does the work of migrate while holding the migration lock. It returns how many
// migrations it applied.
func (s *Store) migrateLocked(ctx context.Context, conn *pgxpool.Conn, ms []migration) (int, error) {
	if s.schema != "" {
		if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{s.schema}.Sanitize()); err != nil {
			return 0, fail(ctx, err, "migrate %s: create schema %q", s.target, s.schema)
		}
	}
	if _, err := conn.Exec(ctx, createMigrationsTable); err != nil {
		return 0, fail(ctx, err, "migrate %s: create %s", s.target, migrationsTable)
	}
	done, last, err := appliedMigrations(ctx, conn.Conn())
	if err != nil {
		return 0, fail(ctx, err, "migrate %s: read %s", s.target, migrationsTable)
	}
	if last.version > len(ms) {
		return 0, fmt.Errorf("postgres: migrate %s: %w: it is at version %d (%s), this binary knows up to %d; upgrade echogate",
			s.target, ErrSchemaTooNew, last.version, last.name, len(ms))
	}
	n := 0
	for _, m := range ms {
		if name, ok := done[m.version]; ok {
			if name != m.name {
				s.log.Warn("postgres: applied migration has another name than the embedded one",
					"version", m.version, "applied", name, "embedded", m.name)
			}
			continue
		}
		if err := s.apply(ctx, conn.Conn(), m); err != nil {
			return n, fail(ctx, err, "migrate %s: apply %s", s.target, m.name)
		}
		n++
		s.log.Debug("postgres: applied migration", "version", m.version, "name", m.name, "target", s.target, "schema", s.schema)
	}
	if n > 0 { // one line for the lot
		s.log.Info("postgres: applied migrations", "count", n, "schema_version", len(ms), "target", s.target, "schema", s.schema)
	}
	return n, nil
}

// apply runs one migration and records it, in one transaction unless it opted out.
func (s *Store) apply(ctx context.Context, c *pgx.Conn, m migration) error {
	record := func(ctx context.Context, q interface {
		Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	}) error {
		_, err := q.Exec(ctx, "INSERT INTO "+migrationsTable+" (version, name, applied_at) VALUES ($1, $2, $3)",
			m.version, m.name, s.now().UTC())
		return err
	}
	if m.noTx {
		// Simple protocol: a migration file may hold several statements.
		if err := c.PgConn().Exec(ctx, m.sql).Close(); err != nil {
			return err
		}
		return record(ctx, c)
	}
	return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		if err := tx.Conn().PgConn().Exec(ctx, m.sql).Close(); err != nil {
			return err
		}
		return record(ctx, tx)
	})
}

type appliedMigration struct {
	version int
	name    string
}

// appliedMigrations returns the applied versions with their names, and the highest one.
func appliedMigrations(ctx context.Context, c *pgx.Conn) (map[int]string, appliedMigration, error) {
	rows, err := c.Query(ctx, "SELECT version, name FROM "+migrationsTable+" ORDER BY version")
	if err != nil {
		return nil, appliedMigration{}, err
	}
	done := map[int]string{}
	var last appliedMigration
	for rows.Next() {
		var a appliedMigration
		if err := rows.Scan(&a.version, &a.name); err != nil {
			rows.Close()
			return nil, appliedMigration{}, err
		}
		done[a.version] = a.name
		last = a
	}
	rows.Close()
	return done, last, rows.Err()
}

// SchemaVersion returns the highest applied migration version (0 for a database never migrated)
// and the highest version this binary knows. doctor reports both.
func (s *Store) SchemaVersion(ctx context.Context) (applied, known int, err error) {
	ms, err := builtinMigrations()
	if err != nil {
		return 0, 0, fmt.Errorf("postgres: schema version: %w", err)
	}
	p, err := s.pool(ctx, "schema version")
	if err != nil {
		return 0, 0, err
	}
	var exists bool
	if err := p.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", migrationsTable).Scan(&exists); err != nil {
		return 0, 0, wrapCtx(ctx, "schema version", err)
	}
	if !exists {
		return 0, len(ms), nil
	}
	var v *int
	if err := p.QueryRow(ctx, "SELECT max(version) FROM "+migrationsTable).Scan(&v); err != nil {
		return 0, 0, wrapCtx(ctx, "schema version", err)
	}
	if v == nil {
		return 0, len(ms), nil
	}
	return *v, len(ms), nil
}
