package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// TestMigrateTurnPages: a database at version 9 with turns and usage rows keeps them, ids
// included, through 0010; turns is then WITHOUT ROWID, usage has no sqlite_sequence counter,
// and new usage ids continue after the old ones.
func TestMigrateTurnPages(t *testing.T) {
	ctx := context.Background()
	s := openAtVersion(t, 10, "0010_turn_pages")
	d := s.st.Load()
	err := d.wr.do(ctx, true, func(tx *wtx) error {
		for _, q := range []string{
			`INSERT INTO turns (id, session, event_key, user_id, status, model, input_tokens, cached_input_tokens, cost_usd, started_at, ended_at, agent, posting)
			 VALUES ('t_01', 'web:a', 'web:e1', 'web:u', 'done', 'm', 7, 5, 0.5, 1000, 2000, 'ag', '{"x":1}')`,
			`INSERT INTO turns (id, session, started_at) VALUES ('t_02', 'web:a', 3000)`,
			`INSERT INTO usage (turn, session, user_id, channel, kind, model, input_tokens, cost_usd, at, agent) VALUES ('t_01', 'web:a', 'web:u', 'web', 'model', 'm', 7, 0.5, 1500, 'ag')`,
			`INSERT INTO usage (turn, session, at) VALUES ('t_01', 'web:a', 1600)`,
			`INSERT INTO usage (turn, session, at) VALUES ('t_01', 'web:a', 1700)`,
		} {
			if _, err := tx.w.conn.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	got, err := s.GetTurn(ctx, "t_01")
	if err != nil || got.Agent != "ag" || got.InputTokens != 7 || got.CachedInputTokens != 5 || got.CostUSD != 0.5 || got.EndedAt.IsZero() || got.Status != "done" {
		t.Errorf("GetTurn(t_01) after 0010 = %+v, %v", got, err)
	}
	if ref, err := s.GetPosting(ctx, "t_01"); err != nil {
		t.Errorf("GetPosting(t_01) after 0010 = %+v, %v", ref, err)
	}
	if list, err := s.ListTurns(ctx, "web:a", 0); err != nil || len(list) != 2 || list[0].ID != "t_02" {
		t.Errorf("ListTurns after 0010 = %+v, %v; want t_02, t_01", list, err)
	}
	us, err := s.ListUsage(ctx, echogate.UsageFilter{Turn: "t_01"}, 0)
	if err != nil || len(us) != 3 || us[0].ID != 3 || us[2].ID != 1 || us[2].Usage.InputTokens != 7 || us[2].Agent != "ag" {
		t.Errorf("ListUsage after 0010 = %+v, %v; want ids 3, 2, 1", us, err)
	}
	id, err := s.RecordUsage(ctx, echogate.UsageRecord{Turn: "t_02", Session: "web:a", At: time.Now()})
	if err != nil || id != 4 {
		t.Errorf("RecordUsage after 0010 = %d, %v; want id 4", id, err)
	}
	var withoutRowid, seq int
	if err := d.r.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_list WHERE name = 'turns' AND wr = 1`).Scan(&withoutRowid); err != nil || withoutRowid != 1 {
		t.Errorf("turns WITHOUT ROWID = %d, %v; want 1", withoutRowid, err)
	}
	if err := d.r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_sequence WHERE name LIKE 'usage%'`).Scan(&seq); err != nil || seq != 0 {
		t.Errorf("sqlite_sequence rows of usage = %d, %v; want 0", seq, err)
	}
	var idx int
	if err := d.r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name IN
		('turns_by_session', 'turns_by_started', 'usage_by_at', 'usage_by_user', 'usage_by_session', 'usage_by_turn')`).Scan(&idx); err != nil || idx != 6 {
		t.Errorf("indexes after 0010 and 0011 = %d, %v; want 6", idx, err)
	}
}

// openAtVersion opens a store in a temporary directory migrated up to the migration before
// next (named so, the next-th in order), for the tests of migration next on populated data.
func openAtVersion(t *testing.T, next int, name string) *Store {
	t.Helper()
	ctx := context.Background()
	s, err := New(Config{Path: filepath.Join(t.TempDir(), "echogate.db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ms, err := builtinMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < next || ms[next-1].name != name {
		t.Fatalf("migrations = %d, want %s as number %d", len(ms), name, next)
	}
	if _, err := s.migrate(ctx, ms[:next-1]); err != nil {
		t.Fatalf("migrate to %d: %v", next-1, err)
	}
	return s
}
