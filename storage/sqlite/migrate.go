package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/echogate/echogate/internal/lazyre"
)

//go:embed migrations/*.sql migrations_events/*.sql
var embeddedMigrations embed.FS

// migration is one numbered schema change, applied in the transaction of every migration the
// database lacks (applyMigrations).
type migration struct {
	version int
	name    string // file name without extension, e.g. "0001_init"
	sql     string
}

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
		ms = append(ms, migration{version: v, name: e.Name()[:len(e.Name())-len(".sql")], sql: string(body)})
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

// eventMigrations are the event log's (see EventsPath).
var eventMigrations = sync.OnceValues(func() ([]migration, error) {
	return loadMigrations(embeddedMigrations, "migrations_events")
})

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER NOT NULL PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_at INTEGER NOT NULL
) STRICT`

// Migrate applies the embedded migrations the database does not have yet, in order, each with
// its row in schema_migrations, all in one write transaction: an upgrade lands whole or not at
// all. It is idempotent and safe to call at every start, also from two processes at once (the
// second finds the work done). It blocks while another process writes; cancelling ctx rolls
// back the migrations in progress. A database migrated by a newer binary fails with
// ErrSchemaTooNew and is left untouched.
//
// The event log (EventsPath) has migrations of its own, applied at the same time on its own
// writer. Events recorded in the main database by versions before the event log existed are
// then moved there (copied, then deleted: a crash in between copies again). Last, it reads
// which sessions have compression checkpoints (cpindex.go).
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := builtinMigrations()
	if err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	// The two files have writers of their own: the event log migrates while the main
	// database does (a fresh data dir is ready that much sooner).
	type result struct {
		ran []migration
		err error
	}
	evDone := make(chan result, 1)
	go func() {
		ran, err := s.migrateEvents(ctx)
		evDone <- result{ran, err}
	}()
	ran, err := s.migrate(ctx, ms)
	ev := <-evDone
	if err == nil {
		err = ev.err
	}
	if err != nil {
		return err
	}
	if n := len(ran) + len(ev.ran); n > 0 {
		// One line for the lot (each migration is logged at debug level).
		s.log.Info("sqlite: applied migrations", "count", n, "schema_version", len(ms), "path", s.path)
	}
	if err := s.moveEvents(ctx); err != nil {
		return err
	}
	if m, err := s.conns(ctx); err == nil {
		if err := s.cps.load(ctx, m); err != nil {
			s.log.Warn("sqlite: read which sessions have checkpoints; every turn reads its own", "err", err)
		}
	}
	return nil
}

// migrateEvents applies the event log's migrations to it and returns those it ran.
func (s *Store) migrateEvents(ctx context.Context) ([]migration, error) {
	ems, err := eventMigrations()
	if err != nil {
		return nil, fmt.Errorf("sqlite: migrate event log: %w", err)
	}
	d, err := s.evConns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: migrate event log: %w", err)
	}
	return s.migrateDB(ctx, d, ems)
}

// migrate applies ms to the main database and returns those it ran.
func (s *Store) migrate(ctx context.Context, ms []migration) ([]migration, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: migrate: %w", err)
	}
	return s.migrateDB(ctx, d, ms)
}

// migrateDB applies ms to the database of d as a solo call on its writer connection: the
// pending migrations are one transaction, and ctx may interrupt it (rolling it back) since no
// other call shares it. It returns the migrations it ran.
func (s *Store) migrateDB(ctx context.Context, d *dbs, ms []migration) ([]migration, error) {
	var ran []migration
	err := d.wr.do(ctx, true, func(tx *wtx) error {
		var err error
		ran, err = s.migrateOn(ctx, tx, ms, d.path)
		return err
	})
	return ran, err
}

// moveEvents moves events left in the main database's events table into the event log, on the
// main writer's connection with the event log attached: a copy (that ignores keys the log has)
// committed first, then the delete of what the log now holds.
func (s *Store) moveEvents(ctx context.Context) error {
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: move events to the event log: %w", err)
	}
	return d.wr.do(ctx, true, func(tx *wtx) error {
		conn := tx.w.conn
		var any int
		if err := conn.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM events)").Scan(&any); err != nil {
			return wrapCtx(ctx, "move events: check the main database", err)
		}
		if any == 0 {
			return nil
		}
		if _, err := conn.ExecContext(ctx, "ATTACH DATABASE ? AS evlog", d.ev.path); err != nil {
			return wrapCtx(ctx, "move events: attach the event log", err)
		}
		defer func() {
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := conn.ExecContext(dctx, "DETACH DATABASE evlog"); err != nil {
				s.log.Warn("sqlite: detach the event log", "err", err)
			}
		}()
		res, err := conn.ExecContext(ctx, `INSERT INTO evlog.events (key, payload, claimed_at, completed_at)
SELECT key, payload, claimed_at, completed_at FROM main.events WHERE true ON CONFLICT (key) DO NOTHING`)
		if err != nil {
			return wrapCtx(ctx, "move events: copy", err)
		}
		copied, _ := res.RowsAffected()
		res, err = conn.ExecContext(ctx, "DELETE FROM main.events WHERE key IN (SELECT key FROM evlog.events)")
		if err != nil {
			return wrapCtx(ctx, "move events: delete the copied ones", err)
		}
		deleted, _ := res.RowsAffected()
		s.log.Info("sqlite: moved events into the event log", "copied", copied, "removed", deleted, "events_path", d.ev.path)
		return nil
	})
}

func (s *Store) migrateOn(ctx context.Context, tx *wtx, ms []migration, path string) ([]migration, error) {
	conn := tx.w.conn
	if _, err := conn.ExecContext(ctx, createMigrationsTable); err != nil {
		return nil, wrapCtx(ctx, "migrate: create schema_migrations", err)
	}
	applied, err := appliedMigrations(ctx, conn)
	if err != nil {
		return nil, wrapCtx(ctx, "migrate: read schema_migrations", err)
	}
	if n := len(applied); n > 0 && applied[n-1].version > len(ms) {
		return nil, fmt.Errorf("sqlite: migrate %s: %w: it is at version %d (%s), this binary knows up to %d; upgrade echogate or use a copy of the database made for this version",
			path, ErrSchemaTooNew, applied[n-1].version, applied[n-1].name, len(ms))
	}
	done := make(map[int]string, len(applied))
	for _, a := range applied {
		done[a.version] = a.name
	}
	var pending []migration
	for _, m := range ms {
		if name, ok := done[m.version]; ok {
			if name != m.name {
				s.log.Warn("sqlite: applied migration has another name than the embedded one",
					"version", m.version, "applied", name, "embedded", m.name)
			}
			continue
		}
		pending = append(pending, m)
	}
	if len(pending) == 0 {
		return nil, nil
	}
	ran, err := s.applyMigrations(ctx, conn, pending)
	if err != nil {
		return nil, err
	}
	for _, m := range ran {
		s.log.Debug("sqlite: applied migration", "version", m.version, "name", m.name, "path", path)
	}
	return ran, nil
}

// applyMigrations runs the pending migrations ms in order and records each, all in one
// IMMEDIATE transaction: a database is upgraded (or created) whole or not at all, and a fresh
// one pays one commit and one schema load for its whole schema, not one per migration. It
// returns the migrations it ran: one another process applied first is skipped (the write lock
// is held, so the check is final). A failure rolls every one of them back, and names the
// migration that failed.
func (s *Store) applyMigrations(ctx context.Context, conn *sql.Conn, ms []migration) (ran []migration, err error) {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return nil, fail(ctx, err, "migrate: begin")
	}
	defer func() {
		if err != nil {
			// A fresh context: the rollback must run even when ctx ended.
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, rerr := conn.ExecContext(rctx, "ROLLBACK"); rerr != nil && !isNoTransaction(rerr) {
				s.log.Error("sqlite: rollback of failed migrations failed", "err", rerr)
			}
			ran = nil
		}
	}()
	for _, m := range ms {
		var n int
		if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations WHERE version = ?", m.version).Scan(&n); err != nil {
			return nil, fail(ctx, err, "migrate: apply %s", m.name)
		}
		if n > 0 {
			continue
		}
		if _, err := conn.ExecContext(ctx, m.sql); err != nil {
			return nil, fail(ctx, err, "migrate: apply %s", m.name)
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
			m.version, m.name, toMicros(s.now())); err != nil {
			return nil, fail(ctx, err, "migrate: apply %s", m.name)
		}
		ran = append(ran, m)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return nil, fail(ctx, err, "migrate: commit")
	}
	return ran, nil
}

type appliedMigration struct {
	version int
	name    string
}

func appliedMigrations(ctx context.Context, db interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) ([]appliedMigration, error) {
	rows, err := db.QueryContext(ctx, "SELECT version, name FROM schema_migrations ORDER BY version")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []appliedMigration
	for rows.Next() {
		var a appliedMigration
		if err := rows.Scan(&a.version, &a.name); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// SchemaVersion returns the highest applied migration version (0 for a database never
// migrated) and the highest version this binary knows. doctor reports both.
func (s *Store) SchemaVersion(ctx context.Context) (applied, known int, err error) {
	ms, err := builtinMigrations()
	if err != nil {
		return 0, 0, fmt.Errorf("sqlite: schema version: %w", err)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("sqlite: schema version: %w", err)
	}
	var v sql.NullInt64
	err = d.r.QueryRowContext(ctx, "SELECT max(version) FROM schema_migrations").Scan(&v)
	if err != nil {
		var n int
		// A database that was never migrated has no schema_migrations table.
		if qerr := d.r.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE name = 'schema_migrations'").Scan(&n); qerr == nil && n == 0 {
			return 0, len(ms), nil
		}
		return 0, 0, wrapCtx(ctx, "schema version", err)
	}
	return int(v.Int64), len(ms), nil
}
