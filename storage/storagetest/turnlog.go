package storagetest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// pausedTurn saves a paused turn of session key and its record; it returns the pause.
func (r *runner) pausedTurn(t *testing.T, s Store, u uniq, key echogate.SessionKey) echogate.PendingTurn {
	t.Helper()
	ctx := t.Context()
	paused := echogate.TurnRecord{ID: u.key("paused"), Session: key, EventKey: u.key("ev-q"), UserID: "slack:U1",
		Status: echogate.TurnPaused, StartedAt: r.at(0), EndedAt: r.at(time.Second)}
	must(t, "CreateTurn(paused)", s.CreateTurn(ctx, paused))
	pend := echogate.PendingTurn{Session: key, Turn: paused.ID, Kind: echogate.PauseApproval, CallID: "call_1", Tool: "run_command",
		State: []byte(`{"pending":[{"id":"call_1"}]}`), RequestedBy: "slack:U1", CreatedAt: r.at(time.Second),
		Prompt: echogate.MessageRef{Platform: "slack", Channel: "C1", ID: "1700000000.000100"}}
	must(t, "SavePending", s.SavePending(ctx, pend))
	return pend
}

func resumeOf(u uniq, pend echogate.PendingTurn, id string, at time.Time) (echogate.TurnResume, echogate.TurnRecord) {
	r := echogate.TurnResume{Turn: id, Session: pend.Session, Paused: pend, EventKey: u.key("ev-" + id),
		Decision: []byte(`{"CallID":"call_1","Approved":true}`), DecidedBy: "slack:U1", At: at}
	rec := echogate.TurnRecord{ID: id, Session: pend.Session, EventKey: r.EventKey, UserID: pend.RequestedBy,
		Status: echogate.TurnRunning, StartedAt: at}
	return r, rec
}

// resumeTurn: the pause is replaced by the decision and the resuming turn, in one call; the
// paused turn no longer shows paused; the resume record lives until the turn's end.
func (r *runner) resumeTurn(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	key := u.session("resume")
	pend := r.pausedTurn(t, s, u, key)
	res, rec := resumeOf(u, pend, u.key("resumed"), r.at(2*time.Second))
	must(t, "ResumeTurn", s.ResumeTurn(ctx, res, rec))

	if _, err := s.GetPending(ctx, key); !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("GetPending after ResumeTurn = %v, want ErrNotFound", err)
	}
	if got, err := s.GetTurn(ctx, pend.Turn); err != nil || got.Status != echogate.TurnResumed {
		t.Errorf("GetTurn(paused) after ResumeTurn = %s, %v; want status %s", got.Status, err, echogate.TurnResumed)
	}
	if got, err := s.GetTurn(ctx, rec.ID); err != nil || got.Status != echogate.TurnRunning || got.EventKey != res.EventKey {
		t.Errorf("GetTurn(resumed) = %+v, %v; want the running record of event %q", got, err, res.EventKey)
	}
	got, err := s.GetResume(ctx, res.EventKey)
	must(t, "GetResume", err)
	if got.Turn != res.Turn || got.Session != key || !slices.Equal(got.Decision, res.Decision) || got.DecidedBy != res.DecidedBy {
		t.Errorf("GetResume = %+v, want %+v", got, res)
	}
	checkPending(t, "GetResume().Paused", got.Paused, pend)
	if !got.ToolStartedAt.IsZero() || got.ToolResult != nil {
		t.Errorf("GetResume tool run = %v, %q; want none yet", got.ToolStartedAt, got.ToolResult)
	}

	// A second decision finds no pause: nothing written.
	res2, rec2 := resumeOf(u, pend, u.key("again"), r.at(3*time.Second))
	checkNotFound(t, "ResumeTurn twice", s.ResumeTurn(ctx, res2, rec2))
	if _, err := s.GetTurn(ctx, rec2.ID); !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("GetTurn of the losing resumer = %v, want ErrNotFound (nothing written)", err)
	}
	if _, err := s.GetResume(ctx, res2.EventKey); !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("GetResume of the losing resumer = %v, want ErrNotFound", err)
	}

	// The turn's end removes the resume record.
	rec.Status, rec.EndedAt = echogate.TurnDoneSt, r.at(4*time.Second)
	must(t, "FinishTurn", s.FinishTurn(ctx, echogate.TurnEnd{Session: key, Turn: rec, At: r.at(4 * time.Second),
		Messages: []echogate.Message{{Role: echogate.RoleAssistant, Content: "done"}}}))
	if _, err := s.GetResume(ctx, res.EventKey); !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("GetResume after FinishTurn = %v, want ErrNotFound", err)
	}
}

// resumeTurnOfRunningRecord: a pause whose turn's end was never written (the record still
// running) is resumed the same, and its record no longer shows running.
func (r *runner) resumeTurnOfRunningRecord(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	key := u.session("running")
	pend := r.pausedTurn(t, s, u, key)
	tr, err := s.GetTurn(ctx, pend.Turn)
	must(t, "GetTurn", err)
	tr.Status, tr.EndedAt = echogate.TurnRunning, time.Time{}
	must(t, "UpdateTurn(running)", s.UpdateTurn(ctx, tr))
	res, rec := resumeOf(u, pend, u.key("resumed"), r.at(2*time.Second))
	must(t, "ResumeTurn", s.ResumeTurn(ctx, res, rec))
	if got, err := s.GetTurn(ctx, pend.Turn); err != nil || got.Status != echogate.TurnResumed {
		t.Errorf("GetTurn(paused, was running) after ResumeTurn = %s, %v; want %s", got.Status, err, echogate.TurnResumed)
	}
}

// reopenEvent: a completed event can be made unfinished again (recovery of a turn whose end was
// lost while its event's completion landed).
func (r *runner) reopenEvent(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	key := u.key("ev")
	if _, err := s.ClaimEvent(ctx, key, []byte(`{"id":"x"}`), r.at(0)); err != nil {
		t.Fatal(err)
	}
	must(t, "CompleteEvent", s.CompleteEvent(ctx, key, r.at(time.Second)))
	must(t, "ReopenEvent", s.ReopenEvent(ctx, key))
	evs, err := s.UnfinishedEvents(ctx, r.at(time.Hour), 0)
	must(t, "UnfinishedEvents", err)
	found := false
	for _, e := range evs {
		if e.Key == key {
			found = string(e.Payload) == `{"id":"x"}`
		}
	}
	if !found {
		t.Errorf("UnfinishedEvents after ReopenEvent lacks %q with its payload", key)
	}
	checkNotFound(t, "ReopenEvent(unknown)", s.ReopenEvent(ctx, u.key("nope")))
}

// resumeTurnRace: of concurrent decisions on one pause exactly one resumes it.
func (r *runner) resumeTurnRace(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	pend := r.pausedTurn(t, s, u, u.session("race"))
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, rec := resumeOf(u, pend, u.key("r"+string(rune('a'+i))), r.at(2*time.Second))
			errs[i] = s.ResumeTurn(ctx, res, rec)
		})
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, echogate.ErrNotFound):
			t.Errorf("ResumeTurn %d = %v, want nil or ErrNotFound", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d concurrent ResumeTurn calls won, want 1", won, n)
	}
}

// recordToolRun: the approved call's start, then its result, are kept with the resume record.
func (r *runner) recordToolRun(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	pend := r.pausedTurn(t, s, u, u.session("tool"))
	res, rec := resumeOf(u, pend, u.key("resumed"), r.at(2*time.Second))
	must(t, "ResumeTurn", s.ResumeTurn(ctx, res, rec))
	must(t, "RecordToolRun(start)", s.RecordToolRun(ctx, rec.ID, "call_1", nil, r.at(3*time.Second)))
	got, err := s.GetResume(ctx, res.EventKey)
	must(t, "GetResume", err)
	checkTime(t, "ToolStartedAt", got.ToolStartedAt, r.at(3*time.Second))
	if got.ToolResult != nil {
		t.Errorf("ToolResult after the start = %q, want nil", got.ToolResult)
	}
	result := []byte(`{"Content":"ok","IsError":false}`)
	must(t, "RecordToolRun(result)", s.RecordToolRun(ctx, rec.ID, "call_1", result, r.at(4*time.Second)))
	got, err = s.GetResume(ctx, res.EventKey)
	must(t, "GetResume", err)
	if !slices.Equal(got.ToolResult, result) || got.ToolStartedAt.IsZero() {
		t.Errorf("GetResume after the result = %v, %q; want the start kept and %q", got.ToolStartedAt, got.ToolResult, result)
	}
	checkNotFound(t, "RecordToolRun of an unknown turn", s.RecordToolRun(ctx, u.key("nope"), "call_1", nil, r.at(0)))
}

// resumeFollowsSession: a deleted session takes its resume records along.
func (r *runner) resumeFollowsSession(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	key := u.session("del")
	must(t, "UpsertSession", s.UpsertSession(ctx, echogate.SessionInfo{Key: key, CreatedAt: r.at(0), UpdatedAt: r.at(0)}))
	pend := r.pausedTurn(t, s, u, key)
	res, rec := resumeOf(u, pend, u.key("resumed"), r.at(2*time.Second))
	must(t, "ResumeTurn", s.ResumeTurn(ctx, res, rec))
	must(t, "DeleteSession", s.DeleteSession(ctx, key))
	if _, err := s.GetResume(ctx, res.EventKey); !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("GetResume after DeleteSession = %v, want ErrNotFound", err)
	}
}

// RunTurnLog runs the turn-log part of Run alone: for stores that implement the turn log but
// not yet every detail of the whole suite (the in-memory test store).
func RunTurnLog(t *testing.T, open func(t *testing.T) Store) {
	t.Helper()
	r := &runner{run: randomHex(t, 6), open: open, base: randomBase(t)}
	for name, fn := range map[string]func(t *testing.T, s Store, u uniq){
		"FinishTurn": r.finishTurn, "ResumeTurn": r.resumeTurn, "ResumeTurnRace": r.resumeTurnRace,
		"ResumeTurnOfRunningRecord": r.resumeTurnOfRunningRecord, "ReopenEvent": r.reopenEvent,
		"RecordToolRun": r.recordToolRun, "RecordPosting": r.recordPosting, "ResumeFollowsSession": r.resumeFollowsSession,
		"BeginTurn": r.beginTurn,
	} {
		t.Run(name, func(t *testing.T) { fn(t, r.open(t), uniq{prefix: "st-" + r.run + "-" + name + "-"}) })
	}
}
