package pipeline

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkUserAdmit is what starting a turn pays for the per-user cap and rate limit, over
// 10 000 users from parallel goroutines (report only).
func BenchmarkUserAdmit(b *testing.B) {
	p := &Pipeline{cfg: Config{PerUser: PerUserLimits{MaxConcurrentTurns: 3, RatePerMinute: 1e9, Burst: 1000}}}
	if err := p.initUserLimits(); err != nil {
		b.Fatal(err)
	}
	users := make([]string, 10_000)
	for i := range users {
		users[i] = fmt.Sprintf("slack:U%07d", i)
	}
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			release, why := p.users.admit(users[i%len(users)], now)
			if why != "" {
				b.Fatal(why)
			}
			release()
			i++
		}
	})
}
