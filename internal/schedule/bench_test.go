package schedule

import (
	"testing"
	"time"
)

// BenchmarkNextSlot reports the cost of one Next per kind of schedule (report only).
func BenchmarkNextSlot(b *testing.B) {
	from := time.Date(2026, 12, 7, 9, 30, 0, 0, time.UTC)
	for name, s := range map[string]Spec{
		"every-30m":           {Every: 30 * time.Minute},
		"cron-weekdays-9":     {Cron: "0 9 * * MON-FRI", Timezone: "Europe/Berlin"},
		"cron-every-5m-hour*": {Cron: "*/5 * * * *", Timezone: "America/New_York"},
		"cron-yearly":         {Cron: "0 0 1 1 *", Timezone: "Europe/Berlin"},
	} {
		sch, err := Of(s)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, ok := sch.Next(from); !ok {
					b.Fatal("no next slot")
				}
			}
		})
	}
}
