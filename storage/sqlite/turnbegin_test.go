package sqlite

import (
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/turnstart"
)

// One process owns a SQLite file: BeginTurn lets the model be called at once and defers the
// question, so the turn's end appends it with the answer (Fold) in the commit it makes anyway.
func TestBeginTurnDefersTheInput(t *testing.T) {
	s := openTemp(t, Config{})
	ctx := t.Context()
	rec := echogate.TurnRecord{ID: "t1", Session: "web:s", Status: echogate.TurnRunning}
	st := s.BeginTurn(ctx, turnstart.Begin{Record: rec, Input: []echogate.Message{{Role: echogate.RoleUser, Content: "q"}}})
	if err := st.Recorded(ctx); err != nil {
		t.Fatalf("Recorded = %v, want nil", err)
	}
	if h, err := s.History(ctx, "web:s", 0); err != nil || len(h) != 0 {
		t.Errorf("History once Recorded = %+v, %v; want nothing written yet (deferred)", h, err)
	}
	if f := st.Fold(); len(f) != 1 || f[0].Content != "q" {
		t.Errorf("Fold = %+v, want the question, for the turn's end to append", f)
	}
}
