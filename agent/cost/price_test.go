package cost

import (
	"math"
	"testing"

	"github.com/echogate/echogate"
)

func TestTablePrice(t *testing.T) {
	tab := Table{
		"gpt-4o-mini": {InputPerMTok: 0.15, OutputPerMTok: 0.60, CachedInputPerMTok: 0.075},
		"gpt-4o":      {InputPerMTok: 2.5, OutputPerMTok: 10},
	}
	for name, tt := range map[string]struct {
		u    echogate.Usage
		want float64
	}{
		"exact":            {echogate.Usage{Model: "gpt-4o-mini", InputTokens: 1_000_000, OutputTokens: 1_000_000}, 0.75},
		"cached input":     {echogate.Usage{Model: "gpt-4o-mini", InputTokens: 1_000_000, CachedInputTokens: 500_000}, 0.075 + 0.0375},
		"longest prefix":   {echogate.Usage{Model: "gpt-4o-mini-2024-07-18", InputTokens: 1_000_000}, 0.15},
		"other prefix":     {echogate.Usage{Model: "gpt-4o-2024-08-06", OutputTokens: 1000}, 0.01},
		"cached at input":  {echogate.Usage{Model: "gpt-4o", InputTokens: 1000, CachedInputTokens: 1000}, 0.0025},
		"unknown is free":  {echogate.Usage{Model: "llama3", InputTokens: 1000}, 0},
		"failed zero cost": {echogate.Usage{Model: "gpt-4o", Failed: true}, 0},
	} {
		if got := tab.Price(tt.u); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s: Price = %g, want %g", name, got, tt.want)
		}
	}
}
