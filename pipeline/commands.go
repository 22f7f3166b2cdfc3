package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/echogate/echogate"
)

// maxOverrides bounds the /model choices kept in memory; past it the oldest choices are dropped
// (the conversation falls back to routing).
const maxOverrides = 10000

// command handles the chat commands /usage and /model. It reports whether ev was one.
func (p *Pipeline) command(ctx context.Context, log *slog.Logger, ev echogate.InboundEvent) bool {
	text := strings.TrimSpace(ev.Text)
	if !strings.HasPrefix(text, "/") {
		return false
	}
	name, arg, _ := strings.Cut(text, " ")
	arg = strings.TrimSpace(arg)
	switch strings.ToLower(name) {
	case "/usage":
		if p.d.Spend == nil {
			return false
		}
		userID := ev.Actor.QualifiedID(ev.Conversation.Platform)
		report, err := p.d.Spend.Report(ctx, userID, ev.Conversation.Platform+":"+ev.Conversation.Channel)
		if err != nil {
			log.Error("pipeline: /usage report", "err", err)
			report = "I couldn't read the usage ledger just now; try again in a moment."
		}
		p.notify(ctx, log, ev, report)
		return true
	case "/model":
		if p.d.Models == nil {
			return false
		}
		key := ev.SessionKey()
		switch {
		case arg == "":
			cur := p.modelOverride(key)
			if cur == "" {
				cur = "automatic (routing rules)"
			}
			p.notify(ctx, log, ev, fmt.Sprintf("Model for this conversation: %s.\nAvailable: %s.\nUse `/model NAME` to pick one, `/model auto` to go back to automatic.",
				cur, strings.Join(p.d.Models.Models(), ", ")))
		case arg == "auto" || arg == "default":
			p.setModelOverride(key, "")
			p.notify(ctx, log, ev, "Back to automatic model choice for this conversation.")
		case !p.d.Models.Known(arg):
			p.notify(ctx, log, ev, fmt.Sprintf("I don't know the model %q. Available: %s.", arg, strings.Join(p.d.Models.Models(), ", ")))
		default:
			p.setModelOverride(key, arg)
			p.notify(ctx, log, ev, fmt.Sprintf("This conversation now uses %s.", arg))
		}
		return true
	}
	return false
}

func (p *Pipeline) modelOverride(key echogate.SessionKey) string {
	p.overrideMu.Lock()
	defer p.overrideMu.Unlock()
	return p.overrides[key]
}

func (p *Pipeline) setModelOverride(key echogate.SessionKey, model string) {
	p.overrideMu.Lock()
	defer p.overrideMu.Unlock()
	if model == "" {
		delete(p.overrides, key)
		return
	}
	if p.overrides == nil {
		p.overrides = map[echogate.SessionKey]string{}
	}
	if len(p.overrides) >= maxOverrides {
		for k := range p.overrides { // drop an arbitrary entry: a bound, not an LRU
			delete(p.overrides, k)
			break
		}
	}
	p.overrides[key] = model
}
