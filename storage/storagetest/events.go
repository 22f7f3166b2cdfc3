// The event log's part of Run: ClaimEvent's once-only claim (also concurrent), CompleteEvent,
// UnfinishedEvents.

package storagetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

func (r *runner) claimEventOnce(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	key := u.key("ev")
	for i, want := range []bool{true, false, false} {
		payload := fmt.Appendf(nil, `{"n":%d}`, i)
		got, err := s.ClaimEvent(ctx, key, payload, r.at(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatalf("ClaimEvent(%q) #%d: %v", key, i+1, err)
		}
		if got != want {
			t.Errorf("ClaimEvent(%q) #%d = %v, want %v", key, i+1, got, want)
		}
	}
	// A duplicate keeps the first payload and claim time.
	evs, err := s.UnfinishedEvents(ctx, r.at(time.Hour), 0)
	must(t, "UnfinishedEvents", err)
	var mine []echogate.ClaimedEvent
	for _, ev := range evs {
		if u.mine(ev.Key) {
			mine = append(mine, ev)
		}
	}
	if len(mine) != 1 {
		t.Fatalf("UnfinishedEvents after claiming %q 3 times = %d of ours, want 1", key, len(mine))
	}
	if got, want := string(mine[0].Payload), `{"n":0}`; got != want {
		t.Errorf("UnfinishedEvents()[%q].Payload = %s, want %s (the first claim's)", key, got, want)
	}
	checkTime(t, "UnfinishedEvents()[0].ClaimedAt", mine[0].ClaimedAt, r.at(0))

	other := u.key("other")
	if got, err := s.ClaimEvent(ctx, other, nil, r.at(0)); err != nil || !got {
		t.Errorf("ClaimEvent(%q) = %v, %v; want true, nil", other, got, err)
	}
}

func (r *runner) claimEventConcurrent(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	const n = 20
	for round := range 3 {
		key := u.key(fmt.Sprintf("race-%d", round))
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			wins  = make(chan bool, n)
			errs  = make(chan error, n)
		)
		for range n {
			wg.Go(func() {
				<-start
				ok, err := s.ClaimEvent(ctx, key, []byte(`{}`), r.at(0))
				if err != nil {
					errs <- err
					return
				}
				wins <- ok
			})
		}
		close(start)
		wg.Wait()
		close(wins)
		close(errs)
		for err := range errs {
			t.Errorf("concurrent ClaimEvent(%q): %v", key, err)
		}
		won := 0
		for ok := range wins {
			if ok {
				won++
			}
		}
		if won != 1 {
			t.Errorf("%d concurrent ClaimEvent(%q): %d returned true, want exactly 1", n, key, won)
		}
	}
}

func (r *runner) completeEvent(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	a, b := u.key("a"), u.key("b")
	for _, k := range []string{a, b} {
		if _, err := s.ClaimEvent(ctx, k, []byte(`{}`), r.at(time.Second)); err != nil {
			t.Fatalf("ClaimEvent(%q): %v", k, err)
		}
	}
	must(t, "CompleteEvent(a)", s.CompleteEvent(ctx, a, r.at(2*time.Second)))
	if err := s.CompleteEvent(ctx, a, r.at(3*time.Second)); err != nil {
		t.Errorf("CompleteEvent(%q) twice = %v, want nil", a, err)
	}
	evs, err := s.UnfinishedEvents(ctx, r.at(time.Hour), 0)
	must(t, "UnfinishedEvents", err)
	var mine []string
	for _, ev := range evs {
		if u.mine(ev.Key) {
			mine = append(mine, ev.Key)
		}
	}
	if want := []string{b}; !slices.Equal(mine, want) {
		t.Errorf("UnfinishedEvents after completing %q = %q, want %q", a, mine, want)
	}
	// A completed event is still a duplicate.
	if got, err := s.ClaimEvent(ctx, a, nil, r.at(4*time.Second)); err != nil || got {
		t.Errorf("ClaimEvent(%q) after completion = %v, %v; want false, nil", a, got, err)
	}
	checkNotFound(t, "CompleteEvent(never claimed)", s.CompleteEvent(ctx, u.key("never"), r.at(0)))
}

func (r *runner) unfinishedEvents(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	// Claimed in an order that differs from their times, with keys that sort in yet another
	// order, so the store must sort by claim time.
	keys := map[int]string{}
	for _, i := range []int{3, 1, 4, 2, 5} {
		keys[i] = u.key(fmt.Sprintf("%c-e%d", 'z'-i, i))
		ok, err := s.ClaimEvent(ctx, keys[i], fmt.Appendf(nil, `{"i":%d}`, i), r.at(time.Duration(i)*time.Second))
		if err != nil || !ok {
			t.Fatalf("ClaimEvent(%q) = %v, %v; want true, nil", keys[i], ok, err)
		}
	}
	must(t, "CompleteEvent", s.CompleteEvent(ctx, keys[2], r.at(10*time.Second)))

	before := r.at(5 * time.Second) // e5 was claimed at exactly `before`: excluded
	all, err := s.UnfinishedEvents(ctx, before, 0)
	must(t, "UnfinishedEvents", err)
	var mine []echogate.ClaimedEvent
	for i, ev := range all {
		if !ev.ClaimedAt.Before(before) {
			t.Errorf("UnfinishedEvents(before %v)[%d].ClaimedAt = %v, not before", before, i, ev.ClaimedAt)
		}
		if i > 0 && ev.ClaimedAt.Before(all[i-1].ClaimedAt) {
			t.Errorf("UnfinishedEvents()[%d].ClaimedAt = %v before [%d] %v, want oldest first", i, ev.ClaimedAt, i-1, all[i-1].ClaimedAt)
		}
		if u.mine(ev.Key) {
			mine = append(mine, ev)
		}
	}
	var got []string
	for _, ev := range mine {
		got = append(got, ev.Key)
	}
	if want := []string{keys[1], keys[3], keys[4]}; !slices.Equal(got, want) {
		t.Fatalf("UnfinishedEvents(before e5) ours = %q, want %q", got, want)
	}
	for _, ev := range mine {
		var (
			c rune
			i int
		)
		fmt.Sscanf(ev.Key[len(u.prefix):], "%c-e%d", &c, &i)
		if want := fmt.Sprintf(`{"i":%d}`, i); string(ev.Payload) != want {
			t.Errorf("UnfinishedEvents()[%q].Payload = %s, want %s", ev.Key, ev.Payload, want)
		}
		checkTime(t, "UnfinishedEvents()["+ev.Key+"].ClaimedAt", ev.ClaimedAt, r.at(time.Duration(i)*time.Second))
	}

	limited, err := s.UnfinishedEvents(ctx, before, 2)
	must(t, "UnfinishedEvents(limit 2)", err)
	if len(limited) != 2 {
		t.Fatalf("UnfinishedEvents(limit 2) returned %d events, want 2", len(limited))
	}
	if limited[0].ClaimedAt.After(limited[1].ClaimedAt) {
		t.Errorf("UnfinishedEvents(limit 2) = %v, %v; want oldest first", limited[0].ClaimedAt, limited[1].ClaimedAt)
	}
	if !limited[0].ClaimedAt.Equal(all[0].ClaimedAt) {
		t.Errorf("UnfinishedEvents(limit 2)[0].ClaimedAt = %v, want the oldest %v", limited[0].ClaimedAt, all[0].ClaimedAt)
	}

	// Nothing is unfinished before the first claim of the run... except other runs' leftovers,
	// which are all older than r.base or in other windows: check only ours.
	early, err := s.UnfinishedEvents(ctx, r.at(time.Second), 0)
	must(t, "UnfinishedEvents(before e1)", err)
	for _, ev := range early {
		if u.mine(ev.Key) {
			t.Errorf("UnfinishedEvents(before e1) includes %q claimed at %v", ev.Key, ev.ClaimedAt)
		}
	}
}
