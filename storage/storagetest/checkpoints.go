package storagetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// CheckpointStore is what context compression (agent/compress.CheckpointStore) persists, plus
// the session methods the suite uses to check that a deleted session takes its checkpoints along.
//
// A checkpoint travels as an echogate.StoredMessage: Session, Seq (the last transcript Seq it
// covers), Turn, Message (the checkpoint message) and At.
type CheckpointStore interface {
	SaveCheckpoint(ctx context.Context, cp echogate.StoredMessage) error
	LatestCheckpoint(ctx context.Context, session echogate.SessionKey) (echogate.StoredMessage, error)
	UpsertSession(ctx context.Context, s echogate.SessionInfo) error
	DeleteSession(ctx context.Context, key echogate.SessionKey) error
}

// RunCheckpoints runs the checkpoint conformance suite against the stores open returns, with the
// same rules as Run: open is called once per subtest, may return a fresh or a shared store, and
// registers its cleanup with t.Cleanup.
//
// It pins: LatestCheckpoint returns the last one saved for the session (by save order, not by
// Seq), with every field as saved and At in UTC (millisecond-precise times exactly); a zero At
// becomes the store's now; a session without checkpoints wraps echogate.ErrNotFound; saving many
// keeps the newest; DeleteSession removes the session's checkpoints; an empty session key, a
// negative Seq and an empty text are rejected (not as not-found); both methods fail with an error
// wrapping ctx.Err() once ctx is cancelled.
func RunCheckpoints(t *testing.T, open func(t *testing.T) CheckpointStore) {
	t.Helper()
	r := &runner{run: randomHex(t, 6), base: randomBase(t)}
	tests := []struct {
		name string
		fn   func(t *testing.T, s CheckpointStore, u uniq)
	}{
		{"RoundTrip", r.checkpointRoundTrip},
		{"LatestWins", r.checkpointLatestWins},
		{"ManyKeepsNewest", r.checkpointMany},
		{"ZeroAtIsNow", r.checkpointZeroAt},
		{"NotFound", r.checkpointNotFound},
		{"DeleteSession", r.checkpointDeleteSession},
		{"Rejects", r.checkpointRejects},
		{"Concurrent", r.checkpointConcurrent},
		{"CancelledContext", r.checkpointCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			if s == nil {
				t.Fatal("open returned a nil store")
			}
			tt.fn(t, s, uniq{prefix: "cp-" + r.run + "-" + tt.name + "-"})
		})
	}
}

func checkpointMsg(text string) echogate.Message {
	return echogate.Message{Role: echogate.RoleUser, Content: "Summary of the earlier conversation (checkpoint)\n\n" + text}
}

func checkCheckpoint(t *testing.T, what string, got, want echogate.StoredMessage) {
	t.Helper()
	checkTime(t, what+".At", got.At, want.At)
	got.At, want.At = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %+v, want %+v", what, got, want)
	}
}

func (r *runner) checkpointRoundTrip(t *testing.T, s CheckpointStore, u uniq) {
	ctx := t.Context()
	cp := echogate.StoredMessage{
		Session: u.session("a"),
		Seq:     22,
		Turn:    u.key("turn"),
		Message: echogate.Message{Role: echogate.RoleUser, Name: "checkpoint",
			Content: "Summary of the earlier conversation (checkpoint)\n\n## Goal\nplan a trip to Zürich 🇨🇭 — \"quoted\" <tags> \\ back\\slash"},
		At: r.at(1500 * time.Millisecond),
	}
	must(t, "SaveCheckpoint", s.SaveCheckpoint(ctx, cp))
	got, err := s.LatestCheckpoint(ctx, cp.Session)
	must(t, "LatestCheckpoint", err)
	checkCheckpoint(t, "LatestCheckpoint", got, cp)
}

func (r *runner) checkpointLatestWins(t *testing.T, s CheckpointStore, u uniq) {
	ctx := t.Context()
	a, b := u.session("a"), u.session("b")
	saves := []echogate.StoredMessage{
		{Session: a, Seq: 10, Message: checkpointMsg("first"), At: r.at(time.Second)},
		{Session: b, Seq: 99, Message: checkpointMsg("other session"), At: r.at(2 * time.Second)},
		{Session: a, Seq: 30, Message: checkpointMsg("second"), At: r.at(3 * time.Second)},
		// Saved last with a lower Seq and an earlier time: still the latest (save order counts).
		{Session: a, Seq: 20, Message: checkpointMsg("third"), At: r.at(500 * time.Millisecond)},
	}
	for i, cp := range saves {
		must(t, fmt.Sprintf("SaveCheckpoint %d", i), s.SaveCheckpoint(ctx, cp))
	}
	got, err := s.LatestCheckpoint(ctx, a)
	must(t, "LatestCheckpoint(a)", err)
	checkCheckpoint(t, "LatestCheckpoint(a)", got, saves[3])
	got, err = s.LatestCheckpoint(ctx, b)
	must(t, "LatestCheckpoint(b)", err)
	checkCheckpoint(t, "LatestCheckpoint(b)", got, saves[1])
}

func (r *runner) checkpointMany(t *testing.T, s CheckpointStore, u uniq) {
	ctx := t.Context()
	key := u.session("a")
	var last echogate.StoredMessage
	for i := range 8 {
		last = echogate.StoredMessage{Session: key, Seq: int64(10 * (i + 1)), Message: checkpointMsg(fmt.Sprintf("n%d", i)), At: r.at(time.Duration(i) * time.Second)}
		must(t, "SaveCheckpoint", s.SaveCheckpoint(ctx, last))
		got, err := s.LatestCheckpoint(ctx, key)
		must(t, "LatestCheckpoint", err)
		checkCheckpoint(t, fmt.Sprintf("LatestCheckpoint after save %d", i), got, last)
	}
}

func (r *runner) checkpointZeroAt(t *testing.T, s CheckpointStore, u uniq) {
	ctx := t.Context()
	key := u.session("a")
	must(t, "SaveCheckpoint", s.SaveCheckpoint(ctx, echogate.StoredMessage{Session: key, Seq: 1, Message: checkpointMsg("x")}))
	got, err := s.LatestCheckpoint(ctx, key)
	must(t, "LatestCheckpoint", err)
	if got.At.IsZero() || got.At.Location() != time.UTC {
		t.Errorf("LatestCheckpoint.At = %v, want the store's now in UTC for a zero At", got.At)
	}
}

func (r *runner) checkpointNotFound(t *testing.T, s CheckpointStore, u uniq) {
	_, err := s.LatestCheckpoint(t.Context(), u.session("none"))
	checkNotFound(t, "LatestCheckpoint(unknown)", err)
}

func (r *runner) checkpointDeleteSession(t *testing.T, s CheckpointStore, u uniq) {
	ctx := t.Context()
	gone, kept := u.session("gone"), u.session("kept")
	for _, k := range []echogate.SessionKey{gone, kept} {
		must(t, "UpsertSession", s.UpsertSession(ctx, echogate.SessionInfo{Key: k, CreatedAt: r.at(0), UpdatedAt: r.at(0)}))
		must(t, "SaveCheckpoint", s.SaveCheckpoint(ctx, echogate.StoredMessage{Session: k, Seq: 5, Message: checkpointMsg("x"), At: r.at(time.Second)}))
	}
	must(t, "DeleteSession", s.DeleteSession(ctx, gone))
	_, err := s.LatestCheckpoint(ctx, gone)
	checkNotFound(t, "LatestCheckpoint(deleted session)", err)
	if _, err := s.LatestCheckpoint(ctx, kept); err != nil {
		t.Errorf("LatestCheckpoint(other session) = %v, want its checkpoint kept", err)
	}
	// Started again under the same key: only new checkpoints count.
	must(t, "UpsertSession", s.UpsertSession(ctx, echogate.SessionInfo{Key: gone, CreatedAt: r.at(time.Hour), UpdatedAt: r.at(time.Hour)}))
	_, err = s.LatestCheckpoint(ctx, gone)
	checkNotFound(t, "LatestCheckpoint(session started again)", err)
}

func (r *runner) checkpointRejects(t *testing.T, s CheckpointStore, u uniq) {
	ctx := t.Context()
	for name, cp := range map[string]echogate.StoredMessage{
		"empty session": {Seq: 1, Message: checkpointMsg("x")},
		"negative seq":  {Session: u.session("a"), Seq: -1, Message: checkpointMsg("x")},
		"empty text":    {Session: u.session("a"), Seq: 1, Message: echogate.Message{Role: echogate.RoleUser}},
	} {
		err := s.SaveCheckpoint(ctx, cp)
		if err == nil || errors.Is(err, echogate.ErrNotFound) {
			t.Errorf("SaveCheckpoint(%s) = %v, want an invalid-argument error", name, err)
		}
	}
	_, err := s.LatestCheckpoint(ctx, u.session("a"))
	checkNotFound(t, "LatestCheckpoint after rejected saves", err)
}

func (r *runner) checkpointConcurrent(t *testing.T, s CheckpointStore, u uniq) {
	ctx := t.Context()
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			key := u.session(fmt.Sprintf("s%d", i))
			for j := range 3 {
				if err := s.SaveCheckpoint(ctx, echogate.StoredMessage{Session: key, Seq: int64(j + 1), Message: checkpointMsg(fmt.Sprintf("%d/%d", i, j)), At: r.at(time.Duration(j) * time.Second)}); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		must(t, fmt.Sprintf("SaveCheckpoint s%d", i), err)
		got, err := s.LatestCheckpoint(ctx, u.session(fmt.Sprintf("s%d", i)))
		must(t, "LatestCheckpoint", err)
		if want := checkpointMsg(fmt.Sprintf("%d/2", i)); got.Seq != 3 || !reflect.DeepEqual(got.Message, want) {
			t.Errorf("LatestCheckpoint(s%d) = seq %d %q, want seq 3 %q", i, got.Seq, got.Message.Content, want.Content)
		}
	}
}

func (r *runner) checkpointCancelled(t *testing.T, s CheckpointStore, u uniq) {
	live := t.Context()
	key := u.session("a")
	must(t, "SaveCheckpoint", s.SaveCheckpoint(live, echogate.StoredMessage{Session: key, Seq: 1, Message: checkpointMsg("x"), At: r.at(0)}))
	ctx, cancel := context.WithCancel(live)
	cancel()
	if err := s.SaveCheckpoint(ctx, echogate.StoredMessage{Session: key, Seq: 2, Message: checkpointMsg("y"), At: r.at(0)}); !errors.Is(err, context.Canceled) {
		t.Errorf("SaveCheckpoint(cancelled) = %v, want context.Canceled", err)
	}
	if _, err := s.LatestCheckpoint(ctx, key); !errors.Is(err, context.Canceled) {
		t.Errorf("LatestCheckpoint(cancelled) = %v, want context.Canceled", err)
	}
	got, err := s.LatestCheckpoint(live, key)
	must(t, "LatestCheckpoint", err)
	if got.Seq != 1 {
		t.Errorf("LatestCheckpoint after a cancelled save = seq %d, want 1", got.Seq)
	}
}
