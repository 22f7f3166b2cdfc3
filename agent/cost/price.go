// Package cost prices usage from a per-model price table and enforces spend budgets.
package cost

import (
	"strings"

	"github.com/echogate/echogate"
)

// Price is one model's price per million tokens, in USD.
type Price struct {
	InputPerMTok       float64
	OutputPerMTok      float64
	CachedInputPerMTok float64 // 0 means the input price
}

// Table prices usage. Model names match exactly, then by the longest configured prefix (so
// "gpt-4o-mini" also prices "gpt-4o-mini-2024-07-18"). Unknown models cost 0 (and are worth a
// warning from the caller: spend would be invisible).
type Table map[string]Price

// Lookup returns the price of model and whether one is configured.
func (t Table) Lookup(model string) (Price, bool) {
	if p, ok := t[model]; ok {
		return p, true
	}
	best, found := "", false
	for name := range t {
		if strings.HasPrefix(model, name) && len(name) > len(best) {
			best, found = name, true
		}
	}
	return t[best], found
}

// Price returns the USD cost of u. Cached input tokens are part of InputTokens (as OpenAI
// reports them) and are charged at the cached price.
func (t Table) Price(u echogate.Usage) float64 {
	p, ok := t.Lookup(u.Model)
	if !ok {
		return 0
	}
	cachedPrice := p.CachedInputPerMTok
	if cachedPrice == 0 {
		cachedPrice = p.InputPerMTok
	}
	cached := u.CachedInputTokens
	if cached > u.InputTokens {
		cached = u.InputTokens
	}
	return (float64(u.InputTokens-cached)*p.InputPerMTok + float64(cached)*cachedPrice + float64(u.OutputTokens)*p.OutputPerMTok) / 1e6
}

// Scope is what a model call or usage is attributed to; budgets are checked per scope.
type Scope struct {
	Turn    string
	Session echogate.SessionKey
	UserID  string // qualified, e.g. "slack:U123"
	Channel string // platform:channel
	Trigger echogate.UsageTrigger
}
