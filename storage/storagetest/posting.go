package storagetest

import (
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// recordPosting: the message a turn's stream was created as is kept with the turn, survives
// its updates and its end, and the latest reference wins.
func (r *runner) recordPosting(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	rec := echogate.TurnRecord{ID: u.key("turn"), Session: u.session("s"), EventKey: "slack:EvP", UserID: "slack:U1",
		Status: echogate.TurnRunning, StartedAt: r.at(time.Second)}
	must(t, "CreateTurn", s.CreateTurn(ctx, rec))
	got, err := s.GetPosting(ctx, rec.ID)
	must(t, "GetPosting before any", err)
	if !got.IsZero() {
		t.Errorf("GetPosting of a turn that posted nothing = %+v, want a zero ref", got)
	}
	first := echogate.MessageRef{Platform: "slack", Channel: "C1", ID: "1700000000.000100"}
	must(t, "RecordPosting", s.RecordPosting(ctx, rec.ID, first))
	rec.Model = "gpt-4o-mini"
	must(t, "UpdateTurn", s.UpdateTurn(ctx, rec))
	if got, err = s.GetPosting(ctx, rec.ID); err != nil || got != first {
		t.Errorf("GetPosting after RecordPosting and UpdateTurn = %+v, %v; want %+v", got, err, first)
	}
	second := echogate.MessageRef{Platform: "slack", Channel: "C1", ID: "1700000000.000200"}
	must(t, "RecordPosting again", s.RecordPosting(ctx, rec.ID, second))
	rec.Status, rec.EndedAt = echogate.TurnDoneSt, r.at(2*time.Second)
	must(t, "FinishTurn", s.FinishTurn(ctx, echogate.TurnEnd{Session: rec.Session, Turn: rec, At: r.at(2 * time.Second)}))
	if got, err = s.GetPosting(ctx, rec.ID); err != nil || got != second {
		t.Errorf("GetPosting after a second RecordPosting and FinishTurn = %+v, %v; want %+v", got, err, second)
	}
	checkNotFound(t, "RecordPosting of an unknown turn", s.RecordPosting(ctx, u.key("nope"), first))
	if _, err := s.GetPosting(ctx, u.key("nope")); err == nil {
		t.Errorf("GetPosting of an unknown turn = nil error, want ErrNotFound")
	} else {
		checkNotFound(t, "GetPosting of an unknown turn", err)
	}
	if err := s.RecordPosting(ctx, rec.ID, echogate.MessageRef{}); err == nil {
		t.Errorf("RecordPosting of a zero ref = nil, want an error")
	}
}
