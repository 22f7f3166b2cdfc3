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

// BenchmarkRebuild is what every turn pays at its start for a 50-message history without a
// checkpoint: Rebuild reads the store (here in memory), RebuildContinued knows there is none.
func BenchmarkRebuild(b *testing.B) {
	hist := stored(testSession, conversation(25))
	for _, tc := range []struct {
		name string
		f    func(*Compressor)
	}{
		{"store", func(c *Compressor) { c.Rebuild(context.Background(), testSession, hist) }},
		{"continued", func(c *Compressor) { c.RebuildContinued(context.Background(), testSession, hist) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c, err := New(Config{ChatModel: "m"}, agenttest.NewScriptedModel(), &memCheckpoints{}, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				tc.f(c)
			}
		})
	}
}
