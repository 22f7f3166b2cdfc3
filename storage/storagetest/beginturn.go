package storagetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/turnstart"
)

// beginTurn checks BeginTurn's contract, whatever order the store writes in (deferred or at
// once): Durable makes the record and the input durable, the input written exactly once; what
// Fold returns the start never writes (the turn's end appends it); usage due with the input
// (Progress) is written with it or left to the caller, never both; a failed write is told to
// the Owner once and returned by every wait; Ready never reports the input written without its
// record.
func (r *runner) beginTurn(t *testing.T, s Store, u uniq) {
	b := beginCase{r: r, s: s, u: u, ctx: t.Context()}
	t.Run("Durable", b.durable)
	t.Run("Fold", b.fold)
	t.Run("ProgressCarriesUsage", b.progressCarriesUsage)
	t.Run("NoInput", b.noInput)
	t.Run("FailedRecord", b.failedRecord)
}

// beginCase is beginTurn's fixture: the store, this run's unique names and the parent test's
// context (a deferred write may outlive a sub-test).
type beginCase struct {
	r   *runner
	s   Store
	u   uniq
	ctx context.Context
}

// rec is the record of a running turn named name, in a session of its own.
func (b beginCase) rec(name string) echogate.TurnRecord {
	return echogate.TurnRecord{ID: b.u.key(name), Session: b.u.session(name), EventKey: b.u.key(name + "-ev"), UserID: "web:u",
		Status: echogate.TurnRunning, Model: "m", StartedAt: b.r.at(0)}
}

func (b beginCase) now() time.Time { return b.r.at(time.Second) }

// history is the contents of key's transcript.
func (b beginCase) history(t *testing.T, key echogate.SessionKey) []string {
	t.Helper()
	h, err := b.s.History(b.ctx, key, 0)
	must(t, "History", err)
	return contents(h)
}

// Durable: Durable makes the record and the input durable, the input written exactly once;
// the start folds nothing once written.
func (b beginCase) durable(t *testing.T) {
	ctx, s := b.ctx, b.s
	want := b.rec("durable")
	st := s.BeginTurn(ctx, turnstart.Begin{Record: want, Input: []echogate.Message{userMsg("q")}, Now: b.now})
	must(t, "Durable", st.Durable(ctx))
	must(t, "Recorded", st.Recorded(ctx))
	got, err := s.GetTurn(ctx, want.ID)
	must(t, "GetTurn after Durable", err)
	checkTurn(t, "GetTurn after Durable", got, want)
	if h := b.history(t, want.Session); !slices.Equal(h, []string{"q"}) {
		t.Errorf("History after Durable = %q, want [q]", h)
	}
	if f := st.Fold(); f != nil {
		t.Errorf("Fold after Durable = %+v, want nil (written)", f)
	}
	must(t, "Durable again", st.Durable(ctx))
	if h := b.history(t, want.Session); !slices.Equal(h, []string{"q"}) {
		t.Errorf("History after a second Durable = %q, want [q] (written once)", h)
	}
}

// Fold: what Fold returns the start never writes; the record is written either way.
func (b beginCase) fold(t *testing.T) {
	ctx, s := b.ctx, b.s
	want := b.rec("fold")
	input := []echogate.Message{userMsg("q1"), userMsg("q2")}
	st := s.BeginTurn(ctx, turnstart.Begin{Record: want, Input: input, Now: b.now})
	folded := st.Fold()
	must(t, "Durable after Fold", st.Durable(ctx))
	h := b.history(t, want.Session)
	switch {
	case folded == nil && !slices.Equal(h, []string{"q1", "q2"}):
		t.Errorf("Fold = nil (written) but History = %q, want [q1 q2]", h)
	case folded != nil && (len(h) != 0 || len(folded) != 2 || folded[0].Content != "q1"):
		t.Errorf("Fold = %+v with History %q; want the input, and nothing written by the start", folded, h)
	}
	if _, err := s.GetTurn(ctx, want.ID); err != nil {
		t.Errorf("GetTurn after Fold and Durable = %v, want the record", err)
	}
}

// ProgressCarriesUsage: usage due with the input is written with it (taken, written and told
// once) or left to the caller, never both.
func (b beginCase) progressCarriesUsage(t *testing.T) {
	ctx, s := b.ctx, b.s
	want := b.rec("progress")
	o := &owner{due: []echogate.UsageRecord{{Turn: want.ID, Session: want.Session, UserID: "web:u", Channel: "web:c", Trigger: echogate.TriggerMessage,
		Usage: echogate.Usage{Kind: echogate.UsageModel, Model: "m", InputTokens: 5, OutputTokens: 1}, At: b.r.at(time.Second)}}}
	st := s.BeginTurn(ctx, turnstart.Begin{Record: want, Input: []echogate.Message{userMsg("q")}, Now: b.now, Owner: o})
	held := st.Progress()
	st.Flush()
	must(t, "Durable", st.Durable(ctx))
	led, err := s.ListUsage(ctx, echogate.UsageFilter{Turn: want.ID}, 0)
	must(t, "ListUsage", err)
	o.mu.Lock()
	defer o.mu.Unlock()
	taken, told, toldErr, written := o.taken, o.told, o.toldErr, o.written
	if held {
		if taken != 1 || told != 1 || toldErr != nil || len(written) != 1 || written[0].ID == 0 {
			t.Errorf("Progress held the usage: taken %d, told %d (%v), written %+v; want taken and written once, with its ledger id", taken, told, toldErr, written)
		}
		if len(led) != 1 || led[0].Usage.InputTokens != 5 {
			t.Errorf("ledger of the turn = %+v, want the one entry written with the input", led)
		}
	} else if taken != 0 || told != 0 || len(led) != 0 {
		t.Errorf("Progress = false (the caller records the usage) but the start took it %d times, told %d, ledger %+v; want none", taken, told, led)
	}
	if h := b.history(t, want.Session); !slices.Equal(h, []string{"q"}) {
		t.Errorf("History = %q, want [q]", h)
	}
}

// NoInput: a start without input writes the record and nothing else.
func (b beginCase) noInput(t *testing.T) {
	ctx, s := b.ctx, b.s
	want := b.rec("noinput")
	st := s.BeginTurn(ctx, turnstart.Begin{Record: want, Now: b.now})
	must(t, "Durable", st.Durable(ctx))
	if f := st.Fold(); f != nil {
		t.Errorf("Fold of a start without input = %+v, want nil", f)
	}
	if h := b.history(t, want.Session); len(h) != 0 {
		t.Errorf("History = %q, want nothing", h)
	}
	if _, err := s.GetTurn(ctx, want.ID); err != nil {
		t.Errorf("GetTurn = %v, want the record", err)
	}
}

// FailedRecord: a failed record write is told to the Owner once and returned by every wait.
func (b beginCase) failedRecord(t *testing.T) {
	ctx, s := b.ctx, b.s
	want := b.rec("failed")
	must(t, "CreateTurn", s.CreateTurn(ctx, want)) // the id exists: the start's record fails
	o := &owner{}
	st := s.BeginTurn(ctx, turnstart.Begin{Record: want, Input: []echogate.Message{userMsg("q")}, Now: b.now, Owner: o})
	if err := st.Recorded(ctx); err == nil {
		t.Error("Recorded of a start whose record exists = nil, want an error")
	}
	if err := st.Durable(ctx); err == nil {
		t.Error("Durable of a start whose record exists = nil, want an error")
	}
	if n := o.failed.Load(); n != 1 {
		t.Errorf("Failed told %d times, want once", n)
	}
}

// owner is a turnstart.Owner that records what the start told it.
type owner struct {
	failed  atomic.Int32
	mu      sync.Mutex
	due     []echogate.UsageRecord
	taken   int
	told    int
	toldErr error
	written []echogate.UsageRecord
}

func (o *owner) StartFailed(error) { o.failed.Add(1) }

func (o *owner) DueUsage() []echogate.UsageRecord {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.taken++
	return o.due
}

func (o *owner) UsageWritten(us []echogate.UsageRecord, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.told, o.toldErr, o.written = o.told+1, err, us
}

// inputBeginner is a store that writes a turn's record and input in one transaction, reading
// the session's newest checkpoint in the same round trip when asked (turnstart.BatchWriter's
// BeginWithInput: PostgreSQL).
type inputBeginner interface {
	BeginWithInput(ctx context.Context, rec echogate.TurnRecord, input []echogate.Message, at time.Time, reads turnstart.Reads) (turnstart.Read, error)
	SaveCheckpoint(ctx context.Context, cp echogate.StoredMessage) error
}

// beginWithInput checks BeginWithInput on the stores that have it: the record and the input are
// both written, the input under the turn; the checkpoint read with them is LatestCheckpoint's
// (ErrNotFound without one); when the record cannot be written (its id exists), neither is.
func (r *runner) beginWithInput(t *testing.T, s Store, u uniq) {
	bw, ok := s.(inputBeginner)
	if !ok {
		t.Skip("the store writes a turn's record and input separately (no BeginWithInput)")
	}
	b := beginCase{r: r, s: s, u: u, ctx: t.Context()}
	ctx := t.Context()
	want := b.rec("together")
	rd, err := bw.BeginWithInput(ctx, want, []echogate.Message{userMsg("q1"), userMsg("q2")}, b.now(), turnstart.Reads{Checkpoint: true})
	must(t, "BeginWithInput", err)
	if cp := rd.Checkpoint; !errors.Is(cp.Err, echogate.ErrNotFound) {
		t.Errorf("BeginWithInput's checkpoint of a session without one = %+v, want an error wrapping ErrNotFound", cp)
	}
	got, err := s.GetTurn(ctx, want.ID)
	must(t, "GetTurn", err)
	if got.Status != echogate.TurnRunning || got.Session != want.Session {
		t.Errorf("GetTurn after BeginWithInput = %s in %q, want %s in %q", got.Status, got.Session, echogate.TurnRunning, want.Session)
	}
	h, err := s.History(ctx, want.Session, 0)
	must(t, "History", err)
	if c := contents(h); !slices.Equal(c, []string{"q1", "q2"}) || h[0].Turn != want.ID {
		t.Errorf("History after BeginWithInput = %q (turn %q), want [q1 q2] under %q", c, h[0].Turn, want.ID)
	}

	next := want
	next.ID = b.u.key("together-2")
	must(t, "SaveCheckpoint", bw.SaveCheckpoint(ctx, echogate.StoredMessage{Session: want.Session, Seq: h[1].Seq, Turn: want.ID, Message: checkpointMsg("summary")}))
	// The entries after q1 read with the writes are q2, not q3 (the reads come first).
	rd, err = bw.BeginWithInput(ctx, next, []echogate.Message{userMsg("q3")}, b.now(), turnstart.Reads{Checkpoint: true, Since: &h[0], SinceLimit: 10})
	must(t, "BeginWithInput after SaveCheckpoint", err)
	if got := rd.Since; got.Err != nil || !got.OK || !slices.Equal(contents(got.Entries), []string{"q2"}) {
		t.Errorf("BeginWithInput's entries after q1 = %q, ok %v, err %v, want [q2], ok", contents(got.Entries), got.OK, got.Err)
	}
	saved := checkpointMsg("summary")
	if cp := rd.Checkpoint; cp.Err != nil || cp.Msg.Seq != h[1].Seq || cp.Msg.Turn != want.ID || cp.Msg.Message.Content != saved.Content {
		t.Errorf("BeginWithInput's checkpoint = %+v, want the saved one (seq %d, turn %q, %q)", cp, h[1].Seq, want.ID, saved.Content)
	}
	if got := b.history(t, want.Session); !slices.Equal(got, []string{"q1", "q2", "q3"}) {
		t.Errorf("History after the second BeginWithInput = %q, want [q1 q2 q3]", got)
	}
	gone, third := h[0], want
	gone.Turn, third.ID = "another", b.u.key("together-3")
	rd, err = bw.BeginWithInput(ctx, third, []echogate.Message{userMsg("q")}, b.now(), turnstart.Reads{Since: &gone, SinceLimit: 10})
	must(t, "BeginWithInput after a changed entry", err)
	if rd.Since.OK || rd.Since.Err != nil {
		t.Errorf("BeginWithInput's entries after a changed entry: ok %v, err %v, want not ok (the caller reads the whole history)", rd.Since.OK, rd.Since.Err)
	}

	// The record alone (DeferredBatch: the input waits): the reads come back, no entry is
	// appended.
	alone := want
	alone.ID = b.u.key("together-alone")
	rd, err = bw.BeginWithInput(ctx, alone, nil, b.now(), turnstart.Reads{Checkpoint: true, Since: &h[1], SinceLimit: 10})
	must(t, "BeginWithInput without input", err)
	if got := rd.Since; got.Err != nil || !got.OK || !slices.Equal(contents(got.Entries), []string{"q3", "q"}) {
		t.Errorf("BeginWithInput without input: entries after q2 = %q, ok %v, err %v, want [q3 q], ok", contents(got.Entries), got.OK, got.Err)
	}
	if cp := rd.Checkpoint; cp.Err != nil || cp.Msg.Seq != h[1].Seq {
		t.Errorf("BeginWithInput without input: checkpoint = %+v, want the saved one (seq %d)", cp, h[1].Seq)
	}
	if got, err := s.GetTurn(ctx, alone.ID); err != nil || got.Status != echogate.TurnRunning {
		t.Errorf("GetTurn after BeginWithInput without input = %+v, %v, want the running record", got, err)
	}
	if got := b.history(t, want.Session); !slices.Equal(got, []string{"q1", "q2", "q3", "q"}) {
		t.Errorf("History after BeginWithInput without input = %q, want [q1 q2 q3 q] (nothing appended)", got)
	}

	dup := b.rec("together-dup")
	must(t, "CreateTurn", s.CreateTurn(ctx, dup))
	if _, err := bw.BeginWithInput(ctx, dup, []echogate.Message{userMsg("lost")}, b.now(), turnstart.Reads{}); err == nil {
		t.Error("BeginWithInput of an existing turn id = nil, want an error")
	}
	if h := b.history(t, dup.Session); len(h) != 0 {
		t.Errorf("History after a failed BeginWithInput = %q, want empty (both or neither)", h)
	}
}
