package storagetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/memrec"
)

// sharedTranscript writes a session where two people take turns: UA, UB, UA, UB; each turn a
// user message and the answer. It returns the session.
func sharedTranscript(t *testing.T, s MemoryStore, p string, base time.Time) echogate.SessionKey {
	t.Helper()
	ctx := ctxT(t)
	key := echogate.SessionKey(p + "s")
	for i, u := range []string{"slack:UA", "slack:UB", "slack:UA", "slack:UB"} {
		turn := fmt.Sprintf("%st%d", p, i)
		if err := s.CreateTurn(ctx, echogate.TurnRecord{ID: turn, Session: key, UserID: u, Status: echogate.TurnRunning, StartedAt: base}); err != nil {
			t.Fatalf("CreateTurn = %v", err)
		}
		msgs := []echogate.Message{{Role: echogate.RoleUser, Content: fmt.Sprintf("%s says %d", u, i)}, {Role: echogate.RoleAssistant, Content: fmt.Sprint("answer ", i)}}
		if err := s.AppendMessages(ctx, key, turn, msgs, base); err != nil {
			t.Fatalf("AppendMessages = %v", err)
		}
	}
	return key
}

func texts(ms []echogate.StoredMessage) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Message.Content)
	}
	return out
}

// memMessagesBy: the transcript entries of one person's turns, after a seq, oldest first, at
// most limit.
func memMessagesBy(t *testing.T, s MemoryStore, p string, base time.Time) {
	ctx := ctxT(t)
	key := sharedTranscript(t, s, p, base)
	all, err := s.MessagesBy(ctx, key, "slack:UA", 0, 0)
	want := []string{"slack:UA says 0", "answer 0", "slack:UA says 2", "answer 2"}
	if err != nil || !slices.Equal(texts(all), want) {
		t.Fatalf("MessagesBy(UA, 0) = %q, %v; want %q", texts(all), err, want)
	}
	got, err := s.MessagesBy(ctx, key, "slack:UB", all[1].Seq, 1)
	if want := []string{"slack:UB says 1"}; err != nil || !slices.Equal(texts(got), want) {
		t.Errorf("MessagesBy(UB, seq of UA's first answer, 1) = %q, %v; want %q", texts(got), err, want)
	}
	if got, err := s.MessagesBy(ctx, key, "slack:UC", 0, 0); err != nil || len(got) != 0 {
		t.Errorf("MessagesBy(UC, who never spoke) = %q, %v; want none", texts(got), err)
	}
}

// consPerPerson: finding 3 of issue 36. Two people's turns in one session make two jobs, each
// keeping its person (a later enqueue does not overwrite an earlier one's user) and its own
// cursor, so each job reads that person's words once and only theirs.
func consPerPerson(t *testing.T, s MemoryStore, p string, base time.Time) {
	ctx := ctxT(t)
	key := sharedTranscript(t, s, p, base)
	sess := string(key)
	at := base.Add(2000 * 24 * time.Hour)
	for _, u := range []string{"slack:UA", "slack:UB"} {
		if err := s.EnqueueConsolidation(ctx, memrec.ConsolidationJob{Session: sess, UserID: u, Channel: "slack:C1", DueAt: at}, at); err != nil {
			t.Fatalf("EnqueueConsolidation(%s) = %v", u, err)
		}
	}
	read := map[string][]string{}
	for range 2 {
		j := claimOwn(t, s, p+"w", sess, at)
		msgs, err := s.MessagesBy(ctx, key, j.UserID, j.Cursor, 0)
		if err != nil || len(msgs) == 0 {
			t.Fatalf("MessagesBy(%s, %d) = %d, %v; want that person's messages", j.UserID, j.Cursor, len(msgs), err)
		}
		read[j.UserID] = texts(msgs)
		if err := s.CompleteConsolidation(ctx, j, memrec.ConsolidationResult{Cursor: msgs[len(msgs)-1].Seq}); err != nil {
			t.Fatalf("CompleteConsolidation = %v", err)
		}
	}
	for u, want := range map[string][]string{
		"slack:UA": {"slack:UA says 0", "answer 0", "slack:UA says 2", "answer 2"},
		"slack:UB": {"slack:UB says 1", "answer 1", "slack:UB says 3", "answer 3"},
	} {
		if !slices.Equal(read[u], want) {
			t.Errorf("job of %s read %q, want %q (that person's turns only)", u, read[u], want)
		}
		st, err := s.ConsolidationState(ctx, sess, u)
		if err != nil || st.UserID != u || !st.DueAt.IsZero() || st.Cursor == 0 {
			t.Errorf("ConsolidationState(%s) = %+v, %v; want that person's job, done, with its cursor", u, st, err)
		}
	}
	a, _ := s.ConsolidationState(ctx, sess, "slack:UA")
	b, _ := s.ConsolidationState(ctx, sess, "slack:UB")
	if a.Cursor == b.Cursor {
		t.Errorf("cursors of UA and UB = %d, %d; want each at its own last message", a.Cursor, b.Cursor)
	}
	// Completing one person's job leaves the other's pending and its cursor alone.
	if err := s.EnqueueConsolidation(ctx, memrec.ConsolidationJob{Session: sess, UserID: "slack:UA", DueAt: at}, at); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConsolidationState(ctx, sess, "slack:UC"); !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("ConsolidationState(UC, no job) = %v, want ErrNotFound", err)
	}
	if st, _ := s.ConsolidationState(ctx, sess, "slack:UB"); st.Cursor != b.Cursor || !st.DueAt.IsZero() {
		t.Errorf("UB's job after UA's enqueue = %+v, want cursor %d and nothing due", st, b.Cursor)
	}
}

// consAfterSessionDeleted: a session deleted (!new, retention) and started again under the same
// key numbers its transcript from 1 again; its people's consolidation starts over with it
// instead of waiting for the new transcript to pass the old cursors.
func consAfterSessionDeleted(t *testing.T, s MemoryStore, p string, base time.Time) {
	ctx := ctxT(t)
	del, ok := s.(interface {
		DeleteSession(ctx context.Context, key echogate.SessionKey) error
		UpsertSession(ctx context.Context, si echogate.SessionInfo) error
	})
	if !ok {
		t.Skip("the store cannot delete sessions")
	}
	key := sharedTranscript(t, s, p, base)
	if err := del.UpsertSession(ctx, echogate.SessionInfo{Key: key, UserID: "slack:UA"}); err != nil {
		t.Fatal(err)
	}
	at := base.Add(3000 * 24 * time.Hour)
	if err := s.EnqueueConsolidation(ctx, memrec.ConsolidationJob{Session: string(key), UserID: "slack:UA", DueAt: at}, at); err != nil {
		t.Fatal(err)
	}
	j := claimOwn(t, s, p+"w", string(key), at)
	if err := s.CompleteConsolidation(ctx, j, memrec.ConsolidationResult{Cursor: 8}); err != nil {
		t.Fatal(err)
	}
	if err := del.DeleteSession(ctx, key); err != nil {
		t.Fatalf("DeleteSession = %v", err)
	}
	if err := s.CreateTurn(ctx, echogate.TurnRecord{ID: p + "again", Session: key, UserID: "slack:UA", Status: echogate.TurnRunning, StartedAt: at}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendMessages(ctx, key, p+"again", []echogate.Message{{Role: echogate.RoleUser, Content: "starting over"}}, at); err != nil {
		t.Fatal(err)
	}
	if err := s.EnqueueConsolidation(ctx, memrec.ConsolidationJob{Session: string(key), UserID: "slack:UA", DueAt: at}, at); err != nil {
		t.Fatal(err)
	}
	st, err := s.ConsolidationState(ctx, string(key), "slack:UA")
	if err != nil || st.Cursor != 0 {
		t.Fatalf("UA's job after the session was deleted and started again = %+v, %v; want cursor 0", st, err)
	}
	if got, err := s.MessagesBy(ctx, key, "slack:UA", st.Cursor, 0); err != nil || !slices.Equal(texts(got), []string{"starting over"}) {
		t.Errorf("MessagesBy(UA, %d) = %q, %v; want the new transcript", st.Cursor, texts(got), err)
	}
}
