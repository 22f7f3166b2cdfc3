package sqlite

import (
	"context"
	"database/sql"
	"testing"

	msqlite "modernc.org/sqlite"
)

// cacheUsed returns the bytes of the page cache of the connection c (SQLITE_DBSTATUS_CACHE_USED).
func cacheUsed(t *testing.T, c *sql.Conn) int {
	t.Helper()
	var used int
	if err := c.Raw(func(dc any) error {
		var err error
		used, _, err = dc.(msqlite.DBStatus).Status(msqlite.DBStatusCacheUsed, false)
		return err
	}); err != nil {
		t.Fatalf("cache used: %v", err)
	}
	return used
}

// writerCacheUsed is cacheUsed of d's writer connection, read on the writer goroutine.
func writerCacheUsed(t *testing.T, d *dbs) int {
	t.Helper()
	var used int
	if err := d.wr.do(context.Background(), true, func(tx *wtx) error {
		used = cacheUsed(t, tx.w.conn)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return used
}

// fillBallast writes rows of 3 KB into d's table ballast, creating it if needed.
func fillBallast(t *testing.T, d *dbs, rows int) {
	t.Helper()
	if err := d.write(context.Background(), func(tx *wtx) error {
		if _, err := tx.exec("CREATE TABLE IF NOT EXISTS ballast (x BLOB)"); err != nil {
			return err
		}
		_, err := tx.exec("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < ?) INSERT INTO ballast SELECT randomblob(3000) FROM n", rows)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// TestReleaseMemoryEmptiesCaches: after a burst of writes and reads, the writer's page cache
// is full and the read pool keeps idle connections with full caches; ReleaseMemory empties the
// writer's cache and closes the idle readers, and the store still reads and writes after it.
func TestReleaseMemoryEmptiesCaches(t *testing.T) {
	s := openTemp(t, Config{})
	ctx := context.Background()
	d, err := s.conns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sum := func() int64 {
		var n int64
		if err := d.r.QueryRowContext(ctx, "SELECT coalesce(sum(length(x)), 0) FROM ballast").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	fill := func(rows int) { fillBallast(t, d, rows) }
	// A read leaves an idle read connection; the write after it (1000 rows of 3 KB, more
	// pages than the writer's cache holds) fills the writer's cache. Nothing reads between
	// the write and the release: SQLite's page caches share one LRU, and a read would take
	// the writer's pages over.
	fill(10)
	if got, want := sum(), int64(3000*10); got != want {
		t.Fatalf("sum = %d, want %d", got, want)
	}
	fill(1000)
	before := writerCacheUsed(t, d)
	if before < writerCacheKiB<<10/2 {
		t.Fatalf("writer cache before release = %d bytes, want at least half its bound %d KiB (the test writes too little)", before, writerCacheKiB)
	}
	if idle := d.r.Stats().Idle; idle == 0 {
		t.Fatalf("read pool idle connections before release = 0, want some")
	}

	if err := s.ReleaseMemory(ctx); err != nil {
		t.Fatalf("ReleaseMemory: %v", err)
	}
	if after := writerCacheUsed(t, d); after > before/8 {
		t.Errorf("writer cache after release = %d bytes, want at most %d (before: %d)", after, before/8, before)
	}
	for name, db := range map[string]*sql.DB{"read pool": d.r, "event log read pool": d.ev.r} {
		if st := db.Stats(); st.Idle != 0 {
			t.Errorf("%s after release: %d idle connections, want 0", name, st.Idle)
		}
		if st := db.Stats(); st.MaxOpenConnections == 0 {
			t.Errorf("%s after release: no bound on open connections", name)
		}
	}
	if got, want := sum(), int64(3000*1010); got != want {
		t.Fatalf("sum after release = %d, want %d", got, want)
	}
	if idle := d.r.Stats().Idle; idle == 0 {
		t.Errorf("read pool keeps no idle connection after release and a read: the idle bound was lost")
	}
	if err := d.write(ctx, func(tx *wtx) error {
		_, err := tx.exec("DELETE FROM ballast")
		return err
	}); err != nil {
		t.Fatalf("write after release: %v", err)
	}
}

// TestReleaseMemoryClosed: a closed store says so.
func TestReleaseMemoryClosed(t *testing.T) {
	s := openTemp(t, Config{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseMemory(context.Background()); err != ErrClosed {
		t.Errorf("ReleaseMemory on a closed store = %v, want ErrClosed", err)
	}
}
