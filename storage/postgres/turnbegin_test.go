package postgres_test

import (
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/ids"
	"github.com/echogate/echogate/internal/turnstart"
)

// PostgreSQL is shared by replicas: once BeginTurn's Ready returns (before the model is
// called), the turn's record and question are durable, so a replica that takes the event over
// after this one died finds the running turn and knows the question was saved.
func TestBeginTurnWritesBeforeReady(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	id := ids.New("t_")
	key := echogate.SessionKey("web:" + id)
	rec := echogate.TurnRecord{ID: id, Session: key, Status: echogate.TurnRunning}
	st := s.BeginTurn(ctx, turnstart.Begin{Record: rec, Input: []echogate.Message{{Role: echogate.RoleUser, Content: "q"}}})
	if err := st.Ready(ctx); err != nil {
		t.Fatalf("Ready = %v, want nil", err)
	}
	if _, err := s.GetTurn(ctx, id); err != nil {
		t.Errorf("GetTurn once Ready = %v, want the running record", err)
	}
	if h, err := s.History(ctx, key, 0); err != nil || len(h) != 1 || h[0].Message.Content != "q" {
		t.Errorf("History once Ready = %+v, %v; want the question", h, err)
	}
	if f := st.Fold(); f != nil {
		t.Errorf("Fold = %+v, want nil (written at once)", f)
	}
}
