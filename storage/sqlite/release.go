package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ReleaseMemory gives back what SQLite holds in memory for the store's connections, for a
// process that has gone quiet after load: every open connection's page cache is emptied of its
// clean pages (PRAGMA shrink_memory on the writers and checkpointers), and the idle read
// connections are closed, with their caches and prepared statements (the pools open new ones
// on demand). Pages live in the C heap of the embedded library, outside the Go heap, and a
// connection's cache otherwise stays full at its bound for as long as the connection is open.
// Then the C heap's empty regions go back to the OS (trimCHeap): its allocator keeps freed
// regions committed for reuse. The next reads fill the caches again from the OS page cache.
//
// It blocks until each writer has run it between two batches (queued behind the writes ahead
// of it) or ctx ends; reads in progress keep their connections. Safe for concurrent use.
func (s *Store) ReleaseMemory(ctx context.Context) error {
	d, err := s.conns(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, db := range []*dbs{d, d.ev} {
		if err := db.releaseMemory(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	// Last, once the caches and idle connections are gone: the pages they freed.
	if err := trimCHeap(); err != nil {
		errs = append(errs, fmt.Errorf("trim SQLite's heap: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return wrapCtx(ctx, "release memory", err)
	}
	return nil
}

// releaseMemory is ReleaseMemory for one database file.
func (d *dbs) releaseMemory(ctx context.Context) error {
	const shrink = "PRAGMA shrink_memory"
	// Solo: between batches, outside any transaction, so every clean page is unpinned.
	if err := d.wr.do(ctx, true, func(tx *wtx) error {
		_, err := tx.w.conn.ExecContext(tx.ctx, shrink)
		return err
	}); err != nil {
		return err
	}
	if _, err := d.cp.db.ExecContext(ctx, shrink); err != nil {
		return err
	}
	closeIdle(d.r)
	if d.v != nil {
		closeIdle(d.v)
	}
	return nil
}

// closeIdle closes the idle connections of pool and keeps its bound on idle connections.
func closeIdle(pool *sql.DB) {
	n := pool.Stats().MaxOpenConnections
	pool.SetMaxIdleConns(-1) // negative: none kept, the idle ones are closed now
	pool.SetMaxIdleConns(n)
}
