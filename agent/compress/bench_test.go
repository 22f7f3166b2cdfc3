package compress

import (
	"context"
	"testing"

	"github.com/echogate/echogate/agent/agenttest"
)

// BenchmarkCompactUnderLimit is the cost every model call pays: estimating a 40-message prompt
// (about 40 KB) that needs no compression.
func BenchmarkCompactUnderLimit(b *testing.B) {
	c, err := New(Config{ChatModel: "m"}, agenttest.NewScriptedModel(), &memCheckpoints{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	var msgs = conversation(20)
	for i := range msgs {
		msgs[i].Content = words("x", 1000)
	}
	b.SetBytes(40 * 1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, changed, _ := c.Compact(context.Background(), testSession, msgs, nil); changed {
			b.Fatal("compressed under the limit")
		}
	}
}
