package cost

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
)

// A reservation holds the call's estimate against the user's day, the gateway's day and the
// turn until it is released; a refused reservation holds nothing.
func TestReserveHoldsUntilRelease(t *testing.T) {
	clk := &clock{now: at("2025-03-14T18:48:00Z")}
	l := &fakeLedger{}
	tr, err := New(Config{Limits: Limits{PerUserDayUSD: 0.035}, Prices: testPrices, Now: clk.Now}, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 1000 output tokens of gpt-4o are $0.01; the short prompt adds a few hundredths of a cent.
	req := agent.Request{Model: "gpt-4o", MaxTokens: 1000, Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "hi"}}}
	est := tr.Estimate(req)
	scope := func(n int) Scope {
		return Scope{Turn: fmt.Sprintf("t%d", n), Session: echogate.SessionKey(fmt.Sprintf("web:s%d", n)), UserID: "web:ann"}
	}
	var releases []func()
	for n := range 3 {
		rel, err := tr.Reserve(context.Background(), scope(n), req)
		if err != nil {
			t.Fatalf("Reserve(call %d) = %v, want a hold (3 × %s fit in $0.035)", n, err, USD(est))
		}
		releases = append(releases, rel)
	}
	_, err = tr.Reserve(context.Background(), scope(3), req)
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != LimitPerUserDay || le.SpentUSD != 0 || !strings.Contains(err.Error(), "held by requests still running") {
		t.Fatalf("Reserve(fourth call) = %v, want the daily limit hit by what the three running calls hold", err)
	}
	if got := le.HeldUSD; got < 3*est-1e-12 || got > 3*est+1e-12 {
		t.Errorf("HeldUSD = %v, want 3 × %v", got, est)
	}
	if err := tr.Check(context.Background(), scope(4), req); !errors.Is(err, agent.ErrBudget) {
		t.Errorf("Check with three calls held = %v, want ErrBudget: Check sees the holds too", err)
	}
	// The first call's usage is recorded (less than its estimate), then its hold released.
	l.add(rec("web:ann", "web:s0", clk.Now(), 0.004))
	releases[0]()
	releases[0]() // twice is harmless
	rel, err := tr.Reserve(context.Background(), scope(5), req)
	if err != nil {
		t.Fatalf("Reserve after one call finished = %v, want a hold ($0.004 spent + 3 × %s held)", err, USD(est))
	}
	rel()
	for _, r := range releases[1:] {
		r()
	}
	day, next, _, _ := tr.bounds(clk.Now())
	if h := tr.held(echogate.UsageFilter{UserID: "web:ann", Since: day, Until: next}); h != 0 {
		t.Errorf("held after every release = %v, want 0", h)
	}
}

// Many parallel reservations of one user are never admitted beyond the limit, whatever their
// interleaving, while another user's calls are not held up by them.
func TestParallelReservationsStayWithinTheLimit(t *testing.T) {
	l := &fakeLedger{}
	tr, err := New(Config{Limits: Limits{PerUserDayUSD: 0.035}, Prices: testPrices, Now: (&clock{now: at("2025-03-14T12:00:00Z")}).Now}, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := agent.Request{Model: "gpt-4o", MaxTokens: 1000, Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "hi"}}}
	est := tr.Estimate(req)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		admitted = map[string]int{}
	)
	for i := range 64 {
		wg.Go(func() {
			user := []string{"web:ann", "web:bob"}[i%2]
			if _, err := tr.Reserve(context.Background(), Scope{Turn: fmt.Sprint(i), UserID: user}, req); err == nil {
				mu.Lock()
				admitted[user]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, user := range []string{"web:ann", "web:bob"} {
		if got := float64(admitted[user]) * est; got > 0.035+1e-9 || admitted[user] != 3 {
			t.Errorf("calls of %s admitted in parallel = %d (%s), want 3: as many as fit in $0.035", user, admitted[user], USD(got))
		}
	}
}
