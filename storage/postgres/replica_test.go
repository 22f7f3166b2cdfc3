package postgres_test

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/storage/postgres"
)

// replicas returns n open stores on one migrated schema: n gateway replicas sharing a database.
func replicas(t *testing.T, n int) []*postgres.Store {
	t.Helper()
	schema := newSchema(t)
	out := make([]*postgres.Store, n)
	for i := range out {
		out[i] = openStore(t, postgres.Config{Schema: schema, MaxConns: 4})
	}
	if err := out[0].Migrate(ctxT(t)); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return out
}

func TestClaimEventAcrossReplicas(t *testing.T) {
	t.Parallel()
	stores := replicas(t, 3)
	ctx := ctxT(t)
	const keys, perStore = 5, 4
	var wins [keys]atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, st := range stores {
		for range perStore {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for k := range keys {
					ok, err := st.ClaimEvent(ctx, fmt.Sprintf("slack:Ev%d", k), []byte(`{"id":1}`), time.Time{})
					if err != nil {
						t.Errorf("ClaimEvent = %v", err)
						return
					}
					if ok {
						wins[k].Add(1)
					}
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	for k := range keys {
		if got := wins[k].Load(); got != 1 {
			t.Errorf("first claims of slack:Ev%d across %d replicas = %d, want exactly 1", k, len(stores), got)
		}
	}
}

func TestAppendMessagesAcrossReplicas(t *testing.T) {
	t.Parallel()
	stores := replicas(t, 2)
	ctx := ctxT(t)
	key := echogate.SessionKey("discord:C9")
	const writers, batches, batch = 4, 5, 3
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range writers {
		st := stores[w%len(stores)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for b := range batches {
				msgs := make([]echogate.Message, batch)
				for i := range msgs {
					msgs[i] = echogate.Message{Role: echogate.RoleUser, Content: fmt.Sprintf("w%d-b%d-%d", w, b, i)}
				}
				if err := st.AppendMessages(ctx, key, fmt.Sprintf("turn-%d-%d", w, b), msgs, time.Time{}); err != nil {
					t.Errorf("AppendMessages = %v", err)
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	h, err := stores[1].History(ctx, key, 0)
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	if len(h) != writers*batches*batch {
		t.Fatalf("History has %d entries, want %d", len(h), writers*batches*batch)
	}
	for i, m := range h {
		if m.Seq != int64(i+1) {
			t.Fatalf("History[%d].Seq = %d, want %d (consecutive from 1)", i, m.Seq, i+1)
		}
	}
	// Each batch is contiguous and in order: appends never interleave.
	for i := 0; i < len(h); i += batch {
		for j := 1; j < batch; j++ {
			prev, cur := h[i+j-1], h[i+j]
			if cur.Turn != prev.Turn || cur.Message.Content[len(cur.Message.Content)-1] != byte('0'+j) {
				t.Fatalf("History[%d..%d] interleaves batches: %q (%s) after %q (%s)", i, i+batch-1, cur.Message.Content, cur.Turn, prev.Message.Content, prev.Turn)
			}
		}
	}
}

// TestAppendAfterDelete checks that a session deleted and used again starts a fresh transcript.
func TestAppendAfterDelete(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := ctxT(t)
	key := echogate.SessionKey("web:again")
	msg := []echogate.Message{{Role: echogate.RoleUser, Content: "hi"}}
	if err := st.UpsertSession(ctx, echogate.SessionInfo{Key: key}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := st.AppendMessages(ctx, key, "t1", msg, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.DeleteSession(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendMessages(ctx, key, "t2", msg, time.Time{}); err != nil {
		t.Fatal(err)
	}
	h, err := st.History(ctx, key, 0)
	if err != nil || len(h) != 1 || h[0].Seq != 1 || h[0].Turn != "t2" {
		t.Errorf("History after delete and append = %+v, %v, want one entry with Seq 1 of turn t2", h, err)
	}
}

// TestMessageEdgeCases covers text PostgreSQL treats specially: NUL (rejected by jsonb and
// text), invalid UTF-8, and a large body.
func TestMessageEdgeCases(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := ctxT(t)
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = 'a' + byte(i%26)
	}
	for name, tt := range map[string]struct {
		in, want string
	}{
		"nul":          {"a\x00b", "a\x00b"},
		"invalid utf8": {"a\xffb", "a\ufffdb"}, // encoding/json replaces it, as in SQLite
		"emoji":        {"✅ 🔁 ❌", "✅ 🔁 ❌"},
		"1 MiB":        {string(big), string(big)},
	} {
		key := echogate.SessionKey("web:" + name)
		msgs := []echogate.Message{{Role: echogate.RoleTool, Content: tt.in, ToolCallID: "c1", Name: "http_fetch"}}
		if err := st.AppendMessages(ctx, key, "t", msgs, time.Time{}); err != nil {
			t.Errorf("%s: AppendMessages = %v", name, err)
			continue
		}
		h, err := st.History(ctx, key, 0)
		if err != nil || len(h) != 1 {
			t.Errorf("%s: History = %d entries, %v, want 1", name, len(h), err)
			continue
		}
		if got := h[0].Message.Content; got != tt.want {
			t.Errorf("%s: content round trip = %q, want %q", name, trunc(got), trunc(tt.want))
		}
	}
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func TestPruneEvents(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := ctxT(t)
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, k := range []string{"old-done", "new-done", "old-open"} {
		if _, err := st.ClaimEvent(ctx, k, nil, t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CompleteEvent(ctx, "old-done", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := st.CompleteEvent(ctx, "new-done", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	n, err := st.PruneEvents(ctx, t0.Add(30*time.Minute))
	if err != nil || n != 1 {
		t.Errorf("PruneEvents = %d, %v, want 1, nil", n, err)
	}
	// The pruned key is gone (a new claim wins), the others stay.
	for k, want := range map[string]bool{"old-done": true, "new-done": false, "old-open": false} {
		if got, err := st.ClaimEvent(ctx, k, nil, t0); err != nil || got != want {
			t.Errorf("ClaimEvent(%s) after prune = %v, %v, want %v", k, got, err, want)
		}
	}
	open, err := st.UnfinishedEvents(ctx, t0.Add(time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, len(open))
	for i, e := range open {
		keys[i] = e.Key
	}
	if want := []string{"old-done", "old-open"}; !slices.Equal(keys, want) {
		t.Errorf("UnfinishedEvents after prune = %v, want %v", keys, want)
	}
}
