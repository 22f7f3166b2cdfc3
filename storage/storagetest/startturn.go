package storagetest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// turnStarter is a store that queues the insert of a turn's record and reports its outcome
// to done (SQLite's writer, which BeginTurn uses). Stores without it are skipped.
type turnStarter interface {
	StartTurn(ctx context.Context, t echogate.TurnRecord, done func(error))
}

// startTurn checks that StartTurn is CreateTurn without the wait: done is told exactly once
// what CreateTurn would have returned, the record is readable once done was told nil, a
// second start of the same id fails, an invalid record or a cancelled ctx fail (perhaps
// before StartTurn returns) and write nothing.
func (r *runner) startTurn(t *testing.T, s Store, u uniq) {
	st, ok := s.(turnStarter)
	if !ok {
		t.Skip("the store writes a turn's record with CreateTurn only")
	}
	ctx := t.Context()
	type started struct {
		id    string
		calls *atomic.Int32
	}
	var starts []started
	start := func(ctx context.Context, rec echogate.TurnRecord) error {
		t.Helper()
		calls := new(atomic.Int32)
		starts = append(starts, started{rec.ID, calls})
		got := make(chan error, 1)
		st.StartTurn(ctx, rec, func(err error) {
			if calls.Add(1) == 1 {
				got <- err
			}
		})
		select {
		case err := <-got:
			return err
		case <-time.After(time.Minute): // a bound on a writer bug, not a timing
			t.Fatalf("StartTurn(%q): done was never told", rec.ID)
			return nil
		}
	}
	// Checked last, after a later write: a store that queues writes has run, by then, every
	// report an earlier start could still make.
	defer func() {
		must(t, "CreateTurn(after the starts)", s.CreateTurn(ctx, echogate.TurnRecord{ID: u.key("last"), Session: u.session("s"), StartedAt: r.at(0)}))
		for _, x := range starts {
			if n := x.calls.Load(); n != 1 {
				t.Errorf("StartTurn(%q): done told %d times, want once", x.id, n)
			}
		}
	}()

	want := echogate.TurnRecord{ID: u.key("turn"), Session: u.session("s"), EventKey: "web:e1", UserID: "web:ann",
		Status: echogate.TurnRunning, StartedAt: r.at(time.Second)}
	must(t, "StartTurn", start(ctx, want))
	got, err := s.GetTurn(ctx, want.ID)
	must(t, "GetTurn after StartTurn", err)
	checkTurn(t, "GetTurn after StartTurn", got, want)
	if err := start(ctx, want); err == nil {
		t.Errorf("StartTurn(%q) twice: done(nil), want an error", want.ID)
	}
	if err := s.CreateTurn(ctx, want); err == nil {
		t.Errorf("CreateTurn(%q) after StartTurn = nil, want an error", want.ID)
	}

	if err := start(ctx, echogate.TurnRecord{Session: u.session("s"), StartedAt: r.at(0)}); err == nil {
		t.Error(`StartTurn(ID "") = nil, want an error naming the empty id`)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	gone := echogate.TurnRecord{ID: u.key("cancelled"), Session: u.session("s"), Status: echogate.TurnRunning, StartedAt: r.at(0)}
	if err := start(cancelled, gone); !errors.Is(err, context.Canceled) {
		t.Errorf("StartTurn(cancelled ctx) = %v, want context.Canceled", err)
	}
	if _, err := s.GetTurn(ctx, gone.ID); !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("GetTurn of the cancelled start = %v, want not found (nothing written)", err)
	}
}
