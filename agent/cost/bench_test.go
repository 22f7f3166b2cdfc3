package cost

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
)

// BenchmarkCheck measures a check against every limit over a 10k-entry in-memory ledger, with
// and without the sum cache (the fake ledger scans, like an unindexed store would).
func BenchmarkCheck(b *testing.B) {
	now, l, lim, req := benchLedger()
	for _, ttl := range []time.Duration{0, 5 * time.Second} {
		b.Run(fmt.Sprintf("ttl=%s", ttl), func(b *testing.B) {
			tr, err := New(Config{Limits: lim, Prices: testPrices, Now: func() time.Time { return now }, CacheTTL: ttl}, l, nil)
			if err != nil {
				b.Fatal(err)
			}
			start := l.queries.Load()
			b.ReportAllocs()
			for b.Loop() {
				if err := tr.Check(context.Background(), Scope{Turn: "t1", Session: "s", UserID: "u1", Channel: "c"}, req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(l.queries.Load()-start)/float64(b.N), "queries/op")
		})
	}
}

// BenchmarkCheckNoLimits is what every model call pays on a gateway without budgets.
func BenchmarkCheckNoLimits(b *testing.B) {
	tr, err := New(Config{Prices: testPrices}, &fakeLedger{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	req := agent.Request{Model: "gpt-4o", Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "hello"}}}
	b.ReportAllocs()
	for b.Loop() {
		if err := tr.Check(context.Background(), Scope{Turn: "t1", Session: "s", UserID: "u1", Channel: "c"}, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReserve is BenchmarkCheck's ttl=5s case with the call's estimate held against every
// limit until release, as each model call now does (report only; compare with BenchmarkCheck).
func BenchmarkReserve(b *testing.B) {
	now, l, lim, req := benchLedger()
	tr, err := New(Config{Limits: lim, Prices: testPrices, Now: func() time.Time { return now }, CacheTTL: 5 * time.Second}, l, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			release, err := tr.Reserve(context.Background(), Scope{Turn: "t1", Session: "s", UserID: "u1", Channel: "c"}, req)
			if err != nil {
				b.Fatal(err)
			}
			release()
		}
	})
}

// benchLedger is the benchmarks' clock, a 10k-entry ledger over 50 users, limits on every
// window, and a small request.
func benchLedger() (time.Time, *fakeLedger, Limits, agent.Request) {
	now := at("2025-03-14T12:00:00Z")
	l := &fakeLedger{}
	for i := range 10_000 {
		l.add(echogate.UsageRecord{Turn: fmt.Sprint("t", i), Session: "s", UserID: fmt.Sprint("u", i%50), Channel: "c",
			Usage: echogate.Usage{CostUSD: 0.0001}, At: now.Add(-time.Duration(i) * time.Minute)})
	}
	lim := Limits{PerTurnUSD: 1, PerSessionUSD: 100, PerUserDayUSD: 10, PerChannelDayUSD: 100, PerDayUSD: 100, PerMonthUSD: 1000}
	req := agent.Request{Model: "gpt-4o", Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "hello"}}}
	return now, l, lim, req
}
