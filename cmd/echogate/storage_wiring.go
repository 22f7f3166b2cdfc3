package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// StorageConf is the `storage:` section: durability and retention.
type StorageConf struct {
	// Sync is "normal" (default) or "full". SQLite in WAL mode with synchronous=NORMAL survives
	// any crash of the process (kill -9) with every acknowledged commit; a power loss or OS
	// crash may lose the last commits before the next checkpoint. "full" fsyncs every commit.
	// PostgreSQL keeps its server's synchronous_commit either way.
	Sync string `yaml:"sync" env:"ECHOGATE_STORAGE_SYNC"`
	// Retention deletes the transcripts of conversations idle for longer (e.g. 90d); 0 keeps
	// them. Turns and the usage ledger are always kept.
	Retention Duration `yaml:"retention" env:"ECHOGATE_STORAGE_RETENTION"`
	// EventRetention is how long the dedupe record of a handled platform event is kept: longer
	// than platforms redeliver (Slack retries for minutes, Discord replays on resume). Default
	// 3 days. Raw event payloads are dropped right after the turn either way.
	EventRetention Duration `yaml:"event_retention" env:"ECHOGATE_STORAGE_EVENT_RETENTION"`
}

const (
	defaultEventRetention = 72 * time.Hour
	// retentionEvery is how often the retention job runs in serve.
	retentionEvery = 10 * time.Minute
	// minEventRetention: below it a Slack retry could arrive after its record is gone.
	minEventRetention = time.Hour
)

func (c *StorageConf) applyDefaults() {
	c.Sync = strings.ToLower(strings.TrimSpace(c.Sync))
	if c.Sync == "" {
		c.Sync = "normal"
	}
	if c.EventRetention == 0 {
		c.EventRetention = Duration(defaultEventRetention)
	}
}

func (c StorageConf) validate() error {
	bad := func(key, msg string, args ...any) error {
		return &ConfigError{Key: key, Msg: fmt.Sprintf(msg, args...)}
	}
	if c.Sync != "normal" && c.Sync != "full" {
		return bad("storage.sync", "%q: use normal (durable across process crashes) or full (fsync every commit) (ECHOGATE_STORAGE_SYNC)", c.Sync)
	}
	if time.Duration(c.EventRetention) < minEventRetention {
		return bad("storage.event_retention", "%s is shorter than platforms redeliver events: use at least 1h (default 72h)", time.Duration(c.EventRetention))
	}
	if r := time.Duration(c.Retention); r > 0 && r < 24*time.Hour {
		return bad("storage.retention", "%s would delete conversations that are still going on: use at least 24h, or 0 to keep them", r)
	}
	return nil
}

// retainer is the retention a store offers (storage/sqlite and storage/postgres both do).
type retainer interface {
	PruneEvents(ctx context.Context, before time.Time) (int64, error)
	ClearEventPayloads(ctx context.Context, before time.Time) (int64, error)
	PruneSessions(ctx context.Context, before time.Time) (int64, error)
	Vacuum(ctx context.Context) error
}

// retentionStats is what one retention pass removed.
type retentionStats struct{ payloads, events, sessions int64 }

// applyRetention runs one retention pass at now.
func applyRetention(ctx context.Context, r retainer, cfg StorageConf, now time.Time) (retentionStats, error) {
	var st retentionStats
	var err error
	if st.payloads, err = r.ClearEventPayloads(ctx, now); err != nil {
		return st, err
	}
	if st.events, err = r.PruneEvents(ctx, now.Add(-time.Duration(cfg.EventRetention))); err != nil {
		return st, err
	}
	if ret := time.Duration(cfg.Retention); ret > 0 {
		if st.sessions, err = r.PruneSessions(ctx, now.Add(-ret)); err != nil {
			return st, err
		}
	}
	return st, nil
}

// addRetention registers the retention job of serve: a pass a minute after start, then every
// retentionEvery. A failed pass is logged and retried at the next one.
func (c *core) addRetention() {
	r, ok := c.store.(retainer)
	if !ok {
		return
	}
	if c.workers == nil {
		c.workers = map[string]func(context.Context) error{}
	}
	log := c.log.With("component", "retention")
	c.workers["retention"] = func(ctx context.Context) error {
		t := time.NewTimer(time.Minute)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
			st, err := applyRetention(ctx, r, c.cfg.Storage, time.Now())
			switch {
			case err != nil && ctx.Err() == nil:
				log.Warn("retention pass failed; retrying at the next", "err", err)
			case st.events+st.sessions > 0:
				log.Info("retention", "payloads_cleared", st.payloads, "events_pruned", st.events, "sessions_pruned", st.sessions)
			}
			t.Reset(retentionEvery)
		}
	}
}

// cmdCompact is `echogate compact`: one retention pass, then a vacuum that gives the freed
// space back to the file system.
func cmdCompact(ctx context.Context, e env, cfg *Config, log *slog.Logger) int {
	s, backend, err := openStore(ctx, cfg, log)
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate compact:", err)
		return 1
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		fmt.Fprintln(e.stderr, "echogate compact: migrate:", err)
		return 1
	}
	r, ok := s.(retainer)
	if !ok {
		fmt.Fprintf(e.stderr, "echogate compact: the %s store has no retention\n", backend)
		return 1
	}
	before := sqliteBytes(cfg.DataDir)
	st, err := applyRetention(ctx, r, cfg.Storage, time.Now())
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate compact:", err)
		return 1
	}
	if err := r.Vacuum(ctx); err != nil {
		fmt.Fprintln(e.stderr, "echogate compact:", err)
		return 1
	}
	space := "PostgreSQL keeps the freed space for the tables' new rows (VACUUM ANALYZE)"
	if backend == "sqlite" {
		after := sqliteBytes(cfg.DataDir)
		space = fmt.Sprintf("%s → %s on disk (%s reclaimed)", humanBytes(before), humanBytes(after), humanBytes(max(before-after, 0)))
	}
	fmt.Fprintf(e.stdout, "compacted the %s store: %d event payloads cleared, %d event records and %d idle conversations removed; %s\n",
		backend, st.payloads, st.events, st.sessions, space)
	return 0
}

// sqliteBytes is the size of the SQLite store's files in dir (echogate.db, echogate-events.db
// and their write-ahead logs).
func sqliteBytes(dir string) int64 {
	files, _ := filepath.Glob(filepath.Join(dir, "echogate*.db*"))
	var n int64
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
	}
	return n
}

// humanBytes writes a size in B, KiB, MiB or GiB with one decimal.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n)/unit, "KiB"
	for _, s := range []string{"MiB", "GiB"} {
		if v < unit {
			break
		}
		v, suffix = v/unit, s
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}
