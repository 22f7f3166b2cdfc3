package storagetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/echogate/echogate/internal/schedule"
)

// BenchClaimSlot measures ClaimSlot followed by MarkSubmitted, the durable cost of starting
// one scheduled run, on a job per iteration block (report only).
func BenchClaimSlot(b *testing.B, s schedule.Store) {
	ctx := context.Background()
	j := testJob(fmt.Sprintf("bench-%d", time.Now().UnixNano()), time.Minute)
	if err := s.CreateJob(ctx, j, 0); err != nil {
		b.Fatal(err)
	}
	cursor := j.Next
	b.ResetTimer()
	for b.Loop() {
		next := cursor.Add(time.Minute)
		ok, err := s.ClaimSlot(ctx, schedule.Claim{JobID: j.ID, Cursor: cursor, Next: next, Slot: cursor, By: "bench", At: cursor})
		if err != nil || !ok {
			b.Fatalf("ClaimSlot = %v, %v", ok, err)
		}
		if err := s.MarkSubmitted(ctx, j.ID, cursor, cursor); err != nil {
			b.Fatal(err)
		}
		cursor = next
	}
}
