package postgres_test

import (
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/ids"
	"github.com/echogate/echogate/internal/turnstart"
)

// PostgreSQL writes the turn's record in the round trip of the context's reads and defers the
// question like a single process does: a plain turn appends it with the answer. Once Recorded
// returns the running record is durable (a replica that takes the event over finds it); the
// question is not written until something needs it (Durable: a tool, the post) or the turn's
// end takes it over (Fold).
func TestBeginTurnWritesTheRecordAndDefersTheQuestion(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	begin := func() (*turnstart.Start, string, echogate.SessionKey) {
		id := ids.New("t_")
		key := echogate.SessionKey("web:" + id)
		rec := echogate.TurnRecord{ID: id, Session: key, Status: echogate.TurnRunning}
		st := s.BeginTurn(ctx, turnstart.Begin{Record: rec, Input: []echogate.Message{{Role: echogate.RoleUser, Content: "q"}}})
		if err := st.Recorded(ctx); err != nil {
			t.Fatalf("Recorded = %v, want nil", err)
		}
		if _, err := s.GetTurn(ctx, id); err != nil {
			t.Errorf("GetTurn once Recorded = %v, want the running record", err)
		}
		if h, err := s.History(ctx, key, 0); err != nil || len(h) != 0 {
			t.Errorf("History once Recorded = %+v, %v; want nothing yet (the question waits)", h, err)
		}
		return st, id, key
	}

	st, _, _ := begin()
	if f := st.Fold(); len(f) != 1 || f[0].Content != "q" {
		t.Errorf("Fold = %+v, want the question, for the turn's end to append", f)
	}

	st, id, key := begin()
	if err := st.Durable(ctx); err != nil {
		t.Fatalf("Durable = %v, want nil", err)
	}
	if h, err := s.History(ctx, key, 0); err != nil || len(h) != 1 || h[0].Message.Content != "q" || h[0].Turn != id {
		t.Errorf("History once Durable = %+v, %v; want the question under the turn", h, err)
	}
	if f := st.Fold(); f != nil {
		t.Errorf("Fold after Durable = %+v, want nil (written)", f)
	}
}
