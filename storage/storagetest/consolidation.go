// The consolidation queue's part of RunMemory: a job's lifecycle, debounce, a lost lease, and
// concurrent workers claiming one session's job.

package storagetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/memrec"
)

func consLifecycle(t *testing.T, s MemoryStore, p string, base time.Time) {
	ctx := ctxT(t)
	sess := p + "s"
	if _, err := s.ConsolidationState(ctx, sess, "web:u"); !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("ConsolidationState(unknown) = %v, want ErrNotFound", err)
	}
	if err := s.EnqueueConsolidation(ctx, memrec.ConsolidationJob{Session: sess, UserID: "web:u", Channel: "web:s", DueAt: base}, base.Add(time.Minute)); err != nil {
		t.Fatalf("EnqueueConsolidation = %v", err)
	}
	// Not due yet.
	if _, ok, err := s.ClaimConsolidation(ctx, p+"w1", base.Add(-time.Second), time.Minute); err != nil || ok {
		t.Errorf("ClaimConsolidation before due = %v, %v; want false, nil", ok, err)
	}
	j := claimOwn(t, s, p+"w1", sess, base.Add(time.Second))
	if j.UserID != "web:u" || j.Channel != "web:s" || j.Cursor != 0 || j.Attempts != 1 {
		t.Errorf("claimed job = %+v, want user web:u, channel web:s, cursor 0, attempt 1", j)
	}
	// Enqueued again while running: stays pending after completion.
	if err := s.EnqueueConsolidation(ctx, memrec.ConsolidationJob{Session: sess, UserID: "web:u", Channel: "web:s", DueAt: base.Add(2 * time.Second)}, base.Add(time.Minute)); err != nil {
		t.Fatalf("EnqueueConsolidation(while leased) = %v", err)
	}
	m := mem(p, "new", "user:web:u", "Likes Helix", base)
	m.Embedding = unit(2, 0)
	if err := s.CompleteConsolidation(ctx, j, memrec.ConsolidationResult{Insert: []memrec.Memory{m}, Cursor: 7}); err != nil {
		t.Fatalf("CompleteConsolidation = %v", err)
	}
	st, err := s.ConsolidationState(ctx, sess, "web:u")
	if err != nil || st.Cursor != 7 || st.Worker != "" || st.DueAt.IsZero() {
		t.Errorf("state after complete (re-enqueued) = %+v, %v; want cursor 7, no worker, still due", st, err)
	}
	if _, err := s.GetMemory(ctx, m.ID); err != nil {
		t.Errorf("GetMemory(inserted by consolidation) = %v", err)
	}
	// Second run: supersede + update + expire; cursor never moves back.
	j2 := claimOwn(t, s, p+"w2", sess, base.Add(3*time.Second))
	m2 := mem(p, "newer", "user:web:u", "Switched to Zed", base.Add(time.Hour))
	old := mem(p, "eph", "user:web:u", "On holiday", base)
	old.ExpiresAt = base.Add(time.Minute)
	if err := s.PutMemory(ctx, old); err != nil {
		t.Fatal(err)
	}
	upd := m
	upd.Text, upd.UpdatedAt = "Likes Helix a lot", base.Add(time.Hour)
	err = s.CompleteConsolidation(ctx, j2, memrec.ConsolidationResult{
		Insert:      []memrec.Memory{m2},
		Update:      []memrec.Memory{upd},
		Supersede:   []memrec.Supersession{{Old: m.ID, New: m2.ID, At: base.Add(time.Hour)}},
		ExpireOwner: p + "user:web:u", ExpireBefore: base.Add(time.Hour),
		Cursor: 5,
	})
	if err != nil {
		t.Fatalf("CompleteConsolidation(2) = %v", err)
	}
	got, _ := s.GetMemory(ctx, m.ID)
	if got.SupersededBy != m2.ID || got.Text != "Likes Helix a lot" || !got.UpdatedAt.Equal(upd.UpdatedAt) {
		t.Errorf("superseded memory = %+v, want superseded by %s with the updated text", got, m2.ID)
	}
	if _, err := s.GetMemory(ctx, old.ID); !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("expired memory after consolidation: %v, want deleted", err)
	}
	st, _ = s.ConsolidationState(ctx, sess, "web:u")
	if st.Cursor != 7 || !st.DueAt.IsZero() || st.Attempts != 0 {
		t.Errorf("state after second complete = %+v, want cursor 7 (never back), nothing due, attempts 0", st)
	}
	// Release with retry, then give up.
	if err := s.EnqueueConsolidation(ctx, memrec.ConsolidationJob{Session: sess, UserID: "web:u", DueAt: base.Add(4 * time.Second)}, base.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	j3 := claimOwn(t, s, p+"w3", sess, base.Add(5*time.Second))
	if err := s.ReleaseConsolidation(ctx, j3, base.Add(time.Hour), "model down"); err != nil {
		t.Fatalf("ReleaseConsolidation = %v", err)
	}
	st, _ = s.ConsolidationState(ctx, sess, "web:u")
	if !st.DueAt.Equal(base.Add(time.Hour)) || st.LastError != "model down" || st.Worker != "" || st.Attempts != 1 {
		t.Errorf("state after release = %+v, want due in an hour, error recorded, free, 1 attempt", st)
	}
	if err := s.ReleaseConsolidation(ctx, j3, time.Time{}, "again"); !errors.Is(err, memrec.ErrLeaseLost) {
		t.Errorf("ReleaseConsolidation of a released job = %v, want ErrLeaseLost", err)
	}
}

func claimOwn(t *testing.T, s MemoryStore, worker, sess string, now time.Time) memrec.ConsolidationJob {
	t.Helper()
	// Other subtests' jobs may be due on a shared store: claim until ours comes, releasing others.
	for range 100 {
		j, ok, err := s.ClaimConsolidation(ctxT(t), worker, now, time.Minute)
		if err != nil || !ok {
			t.Fatalf("ClaimConsolidation(%s) = %v, %v; want our job", worker, ok, err)
		}
		if j.Session == sess {
			if j.Worker != worker || j.LeaseUntil.IsZero() {
				t.Errorf("claimed job worker %q lease %v, want %q and a lease", j.Worker, j.LeaseUntil, worker)
			}
			return j
		}
		_ = s.ReleaseConsolidation(ctxT(t), j, now.Add(time.Hour*24*365), "")
	}
	t.Fatalf("ClaimConsolidation never returned session %s", sess)
	return memrec.ConsolidationJob{}
}

func consDebounce(t *testing.T, s MemoryStore, p string, base time.Time) {
	ctx := ctxT(t)
	sess := p + "s"
	enq := func(due time.Time) {
		if err := s.EnqueueConsolidation(ctx, memrec.ConsolidationJob{Session: sess, UserID: "web:u", DueAt: due}, due.Add(8*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	enq(base.Add(2 * time.Minute)) // notAfter = base+10m
	enq(base.Add(4 * time.Minute))
	st, _ := s.ConsolidationState(ctx, sess, "web:u")
	if !st.DueAt.Equal(base.Add(4 * time.Minute)) {
		t.Errorf("due after a second enqueue = %v, want %v (debounced)", st.DueAt, base.Add(4*time.Minute))
	}
	enq(base.Add(12 * time.Minute))
	st, _ = s.ConsolidationState(ctx, sess, "web:u")
	if !st.DueAt.Equal(base.Add(10 * time.Minute)) {
		t.Errorf("due after a late enqueue = %v, want %v (capped by the first notAfter)", st.DueAt, base.Add(10*time.Minute))
	}
}

func consLeaseLost(t *testing.T, s MemoryStore, p string, base time.Time) {
	ctx := ctxT(t)
	sess := p + "s"
	if err := s.EnqueueConsolidation(ctx, memrec.ConsolidationJob{Session: sess, DueAt: base}, base); err != nil {
		t.Fatal(err)
	}
	j1 := claimOwn(t, s, p+"w1", sess, base)
	// w1 stalls past its lease; w2 takes over.
	j2 := claimOwn(t, s, p+"w2", sess, base.Add(2*time.Minute))
	if j2.Attempts != 2 {
		t.Errorf("takeover attempts = %d, want 2", j2.Attempts)
	}
	m := mem(p, "dup", "u", "from the stalled worker", base)
	if err := s.CompleteConsolidation(ctx, j1, memrec.ConsolidationResult{Insert: []memrec.Memory{m}, Cursor: 3}); !errors.Is(err, memrec.ErrLeaseLost) {
		t.Errorf("CompleteConsolidation(stale lease) = %v, want ErrLeaseLost", err)
	}
	if _, err := s.GetMemory(ctx, m.ID); !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("memory of a stale completion exists (%v): want nothing written", err)
	}
	if err := s.CompleteConsolidation(ctx, j2, memrec.ConsolidationResult{Cursor: 3}); err != nil {
		t.Errorf("CompleteConsolidation(current lease) = %v", err)
	}
}

func consConcurrent(t *testing.T, s MemoryStore, p string, base time.Time) {
	ctx := ctxT(t)
	sess := p + "s"
	// Far in the future so no other subtest's job competes.
	at := base.Add(1000 * 24 * time.Hour)
	if err := s.EnqueueConsolidation(ctx, memrec.ConsolidationJob{Session: sess, DueAt: at}, at); err != nil {
		t.Fatal(err)
	}
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		got int
	)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j, ok, err := s.ClaimConsolidation(ctx, fmt.Sprint(p, "w", i), at, time.Minute)
			if err != nil {
				t.Errorf("ClaimConsolidation = %v", err)
				return
			}
			if ok && j.Session == sess {
				mu.Lock()
				got++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if got != 1 {
		t.Errorf("concurrent claims of one job = %d winners, want 1", got)
	}
}
