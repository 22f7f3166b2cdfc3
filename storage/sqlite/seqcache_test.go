package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// TestSeqCacheFollowsOtherWriters: appends keep numbering the transcript 1, 2, 3… although the
// writer no longer reads max(seq) per append — after another process appended to the same
// file (the cached seq is behind: the insert meets the existing seq and the database is asked)
// and after a deletion (numbering starts again).
func TestSeqCacheFollowsOtherWriters(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "echogate.db")
	s := openTemp(t, Config{Path: path})
	other := openTemp(t, Config{Path: path}) // another process on the same file
	key := echogate.SessionKey("web:seq")
	msg := func(text string) []echogate.Message {
		return []echogate.Message{{Role: echogate.RoleUser, Content: text}}
	}
	steps := []struct {
		st   *Store
		text string
	}{{s, "a"}, {s, "b"}, {other, "c"}, {other, "d"}, {s, "e"}, {s, "f"}}
	for _, step := range steps {
		if err := step.st.AppendMessages(ctx, key, "t", msg(step.text), time.Time{}); err != nil {
			t.Fatalf("AppendMessages(%q) = %v", step.text, err)
		}
	}
	checkSeqs(t, s, key, "abcdef")

	if err := s.UpsertSession(ctx, echogate.SessionInfo{Key: key}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx, key); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"g", "h"} {
		if err := s.AppendMessages(ctx, key, "t", msg(text), time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	checkSeqs(t, s, key, "gh")
}

// checkSeqs asserts key's transcript is want's letters with seq 1, 2, 3….
func checkSeqs(t *testing.T, s *Store, key echogate.SessionKey, want string) {
	t.Helper()
	hist, err := s.History(context.Background(), key, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for i, m := range hist {
		got += m.Message.Content
		if m.Seq != int64(i+1) {
			t.Errorf("entry %d (%q) has seq %d, want %d", i, m.Message.Content, m.Seq, i+1)
		}
	}
	if got != want {
		t.Errorf("transcript = %q, want %q", got, want)
	}
}

// TestSeqCacheRolledBack: seqs of a transaction that did not commit are never kept.
func TestSeqCacheRolledBack(t *testing.T) {
	var c seqCache
	c.set("a", 3)
	c.committed()
	c.set("a", 5)
	c.set("b", 1)
	c.rolledBack()
	if seq, ok := c.get("a"); !ok || seq != 3 {
		t.Errorf("after a rollback: a = %d, %v, want 3, true (the committed seq)", seq, ok)
	}
	if _, ok := c.get("b"); ok {
		t.Error("after a rollback: b is cached, want not")
	}
	c.forget("a")
	if _, ok := c.get("a"); ok {
		t.Error("after forget: a is cached, want not")
	}
}
