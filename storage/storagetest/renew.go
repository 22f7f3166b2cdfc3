package storagetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Renewer is the optional claim renewal of stores shared by replicas (pipeline.ClaimRenewer).
type Renewer interface {
	Store
	RenewClaims(ctx context.Context, keys []string, now time.Time) (int64, error)
}

// renewMany is more keys than one statement of the store carries, so the chunks' order is
// checked too.
const renewMany = 2100

// RunRenewClaims checks RenewClaims: the renewed events are fresh (UnfinishedEvents before the
// renewal leaves them out) and listed in the order of the keys renewed, also across the store's
// chunks; completed events stay completed; unknown keys are fine; an empty list does nothing,
// not even a round trip (it succeeds with a cancelled context).
func RunRenewClaims(t *testing.T, open func(t *testing.T) Renewer) {
	ctx := context.Background()
	s := open(t)
	base := time.Now().UTC().Truncate(time.Millisecond)
	key := func(n string) string { return fmt.Sprintf("renew:%d:%s", base.UnixNano(), n) }
	old := base.Add(-time.Hour)
	for _, n := range []string{"a", "b", "c", "done"} {
		if _, err := s.ClaimEvent(ctx, key(n), []byte(`{}`), old); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CompleteEvent(ctx, key("done"), old); err != nil {
		t.Fatal(err)
	}
	// c before a: the order renewed is the order kept, not the keys'.
	n, err := s.RenewClaims(ctx, []string{key("c"), key("unknown"), key("done"), key("a")}, base)
	if err != nil || n != 2 {
		t.Fatalf("RenewClaims(c, unknown, done, a) = %d, %v; want 2 renewed", n, err)
	}
	if got, want := ownUnfinished(t, s, base.Add(-time.Minute), key("")), key("b"); got != want {
		t.Errorf("unfinished before the renewal = %s, want %s (the renewed ones are fresh)", got, want)
	}
	if got, want := ownUnfinished(t, s, base.Add(time.Second), key("")), strings.Join([]string{key("b"), key("c"), key("a")}, ","); got != want {
		t.Errorf("unfinished after it = %s, want %s (renewed in the order given; done stays done)", got, want)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if n, err := s.RenewClaims(cancelled, nil, base); n != 0 || err != nil {
		t.Errorf("RenewClaims(no keys) = %d, %v; want 0, nil without asking the database", n, err)
	}
	if _, err := s.RenewClaims(cancelled, []string{key("a")}, base); err == nil {
		t.Error("RenewClaims with a cancelled context succeeded")
	}

	many := make([]string, renewMany)
	for i := range many {
		// Keys sorting against their order: only the claim times can list them as given.
		many[i] = key(fmt.Sprintf("many:%04d", renewMany-i))
		if _, err := s.ClaimEvent(ctx, many[i], []byte(`{}`), old); err != nil {
			t.Fatal(err)
		}
	}
	later := base.Add(time.Minute)
	if n, err := s.RenewClaims(ctx, many, later); err != nil || n != renewMany {
		t.Fatalf("RenewClaims(%d keys) = %d, %v; want all renewed", renewMany, n, err)
	}
	if got, want := ownUnfinished(t, s, later.Add(time.Second), key("many:")), strings.Join(many, ","); got != want {
		t.Errorf("%d renewed keys listed out of the order renewed", renewMany)
	}
	if got := ownUnfinished(t, s, later.Add(-time.Second), key("many:")); got != "" {
		t.Errorf("renewed keys still listed before the renewal: %.80s…", got)
	}
}

// ownUnfinished lists the unfinished events before `before` whose keys start with prefix,
// joined by commas in the store's order.
func ownUnfinished(t *testing.T, s Store, before time.Time, prefix string) string {
	t.Helper()
	evs, err := s.UnfinishedEvents(context.Background(), before, 0)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, ev := range evs {
		if strings.HasPrefix(ev.Key, prefix) {
			keys = append(keys, ev.Key)
		}
	}
	return strings.Join(keys, ",")
}
