package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/ids"
)

// maxOverrides bounds the /model choices kept in memory; past it the oldest choices are dropped
// (the conversation falls back to routing).
const maxOverrides = 10000

// Command names. The same handlers answer every channel: `/usage` in the terminal and the web
// chat, `/echogate usage` (Slack) and the application command (Discord), which adapters
// normalize to "/usage", and `!usage` typed in a Slack or Discord thread or DM (Slack keeps a
// leading "/" for its own commands).
const (
	cmdUsage = "usage"
	cmdModel = "model"
	cmdStop  = "stop"
	cmdNew   = "new"
	cmdHelp  = "help"
)

// parseCommand splits "/name arg" or "!name arg" into a lower-case name and its argument.
func parseCommand(text string) (name, arg string, ok bool) {
	text = strings.TrimSpace(text)
	if len(text) < 2 || (text[0] != '/' && text[0] != '!') {
		return "", "", false
	}
	name, arg, _ = strings.Cut(text[1:], " ")
	name = strings.ToLower(strings.TrimSpace(name))
	arg = strings.TrimSpace(arg)
	switch name {
	case cmdModel, cmdMCP:
		return name, arg, true
	case cmdUsage, cmdStop, cmdNew, cmdHelp, cmdSchedules:
		// Only the bare word: "!help me write a poem" or "/new york weather" is a message.
		return name, "", arg == ""
	}
	return "", "", false
}

// command handles the chat commands. It reports whether ev was one; a command always ends its
// exchange with an answer (see answerCommand), so no client waits for a turn that never comes.
func (p *Pipeline) command(ctx context.Context, ctl *turnCtl, log *slog.Logger, evp *echogate.InboundEvent) bool {
	return p.commandOf(ctx, ctl, log, evp, "")
}

// commandOf is command in a session whose paused turn requester started ("" none): the
// requester has a say over the conversation's commands too (authority).
func (p *Pipeline) commandOf(ctx context.Context, ctl *turnCtl, log *slog.Logger, evp *echogate.InboundEvent, requester string) bool {
	ev := *evp
	name, arg, ok := parseCommand(ev.Text)
	if !ok {
		if ev.Interaction != "" { // an interaction always gets its answer
			p.answerCommand(ctx, log, ev, commandHelp())
			return true
		}
		return false
	}
	if refused := p.commandAuthority(ctx, ctl, &ev, name, arg, requester); refused != "" {
		p.refuseCommand(ctx, log, ev, refused)
		return true
	}
	var answer string
	switch name {
	case cmdUsage:
		answer = p.usageCommand(ctx, log, ev)
	case cmdModel:
		answer = p.modelCommand(ev, arg)
	case cmdStop:
		// A running turn was stopped by the dispatcher already; a paused one by handlePaused.
		answer = "Nothing is running in this conversation."
	case cmdNew:
		answer = p.newCommand(ctx, ctl, log, ev)
	case cmdSchedules:
		p.schedulesCommand(ctx, log, ev) // schedules_cmd.go: privately
		return true
	case cmdMCP:
		p.mcpCommand(ctx, log, ev, arg) // mcp_cmd.go: privately
		return true
	default:
		answer = commandHelp() + p.skillsHelp(ev) // skills.go
	}
	p.answerCommand(ctx, log, ev, answer)
	return true
}

// commandAuthority applies authority to the commands that act on the whole conversation:
// !new, and !model with a choice (showing it is anyone's). It returns who can when ev's sender
// may not, "" when they may.
func (p *Pipeline) commandAuthority(ctx context.Context, ctl *turnCtl, ev *echogate.InboundEvent, name, arg, requester string) string {
	a := actMessage
	switch {
	case name == cmdNew:
		a = actNew
	case name == cmdModel && arg != "" && p.d.Models != nil:
		a = actModelSet
	default:
		return ""
	}
	prof := p.profileFor(*ev)
	who := parties{requester: requester, approvers: prof.approvers, dm: ev.Conversation.DM, pinned: a == actModelSet && prof.pinned}
	ctl.waitSessionWrite() // a new conversation's starter may be the one whose upsert is landing
	if p.allowed(ctx, ev, a, &who) {
		return ""
	}
	return whoCan(a, who, "", p.nameOf)
}

func commandHelp() string {
	return "Commands:\n" +
		"• `usage`: your spend and limits\n" +
		"• `model [NAME|auto]`: show or pick the model of this conversation\n" +
		"• `stop`: stop the running turn\n" +
		"• `new`: forget this conversation and start over\n" +
		"• `schedules`: your scheduled jobs\n" +
		"• `mcp [login|revoke NAME]`: your logins to MCP servers\n" +
		"• `help`: this list\n" +
		"In Slack use `/echogate usage` (or type `!usage` in a thread or DM); in Discord the `/echogate` command or `!usage`; in the terminal and the web chat `/usage`."
}

func (p *Pipeline) usageCommand(ctx context.Context, log *slog.Logger, ev echogate.InboundEvent) string {
	if p.d.Spend == nil {
		return "Usage tracking is not configured on this gateway."
	}
	userID := ev.Actor.QualifiedID(ev.Conversation.Platform)
	report, err := p.d.Spend.Report(ctx, userID, ev.Conversation.Platform+":"+ev.Conversation.Channel, ev.SessionKey())
	if err != nil {
		log.Error("pipeline: /usage report", "err", err)
		return "I couldn't read the usage ledger just now; try again in a moment."
	}
	return report
}

func (p *Pipeline) modelCommand(ev echogate.InboundEvent, arg string) string {
	if p.d.Models == nil {
		return fmt.Sprintf("This gateway uses %s; choosing a model per conversation is not configured.", p.profileFor(ev).Model)
	}
	key := ev.SessionKey()
	switch {
	case arg == "":
		cur := p.overrides.get(key)
		if pr := p.profileFor(ev); cur == "" && pr.pinned {
			cur = pr.Model + " (the " + pr.Name + " agent's)"
		}
		if cur == "" {
			cur = "automatic (routing rules)"
		}
		return fmt.Sprintf("Model for this conversation: %s.\nAvailable: %s.\nUse `model NAME` to pick one, `model auto` to go back to automatic.",
			cur, strings.Join(p.d.Models.Models(), ", "))
	case arg == "auto" || arg == "default":
		p.overrides.set(key, "")
		return "Back to automatic model choice for this conversation."
	case !p.d.Models.Known(arg):
		return fmt.Sprintf("I don't know the model %q. Available: %s.", arg, strings.Join(p.d.Models.Models(), ", "))
	}
	p.overrides.set(key, arg)
	return fmt.Sprintf("This conversation now uses %s.", arg)
}

// newCommand forgets the conversation: transcript, pause, grants and model choice. The usage
// ledger keeps its entries.
func (p *Pipeline) newCommand(ctx context.Context, ctl *turnCtl, log *slog.Logger, ev echogate.InboundEvent) string {
	key := ev.SessionKey()
	ctl.waitSessionWrite() // never delete before the session's own upsert landed
	if err := p.d.Store.DeleteSession(ctx, key); err != nil {
		log.Error("pipeline: /new delete session", "err", err)
		return "I couldn't clear this conversation just now; try again in a moment."
	}
	p.pending.remove(key)
	p.hist.drop(key)
	p.marks.forget(key)
	p.overrides.set(key, "")
	return "Starting over: I've forgotten this conversation."
}

// answerCommand ends a command's exchange with its answer. Channels that observe turns (web,
// terminal) see it as a turn without a model call, ending with done; the others get a notice,
// private when the command came as an interaction.
func (p *Pipeline) answerCommand(ctx context.Context, log *slog.Logger, ev echogate.InboundEvent, text string) {
	if obs := p.caps[ev.Conversation.Platform].Observer; obs != nil && ev.Interaction == "" {
		turn := ids.New("c_")
		now := p.cfg.Now()
		base := echogate.TurnEvent{Session: ev.SessionKey(), Turn: turn, EventID: ev.ID, Time: now}
		started, done := base, base
		started.Type = echogate.TurnStarted
		done.Type, done.Status, done.Text = echogate.TurnDone, string(echogate.TurnDoneSt), text
		obs.ObserveTurn(started)
		obs.ObserveTurn(done)
		return
	}
	p.notify(ctx, log, ev, text)
}

// answerStop answers a stop command that stopped a running turn, when it came as an
// interaction (the stopped turn's own answer goes to the conversation).
func (p *Pipeline) answerStop(ctx context.Context, ev echogate.InboundEvent) {
	if ev.Interaction == "" {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
	defer cancel()
	p.notify(cctx, p.log.With("session", ev.SessionKey(), "event_id", ev.ID), ev, "Stopping the running turn.")
}

// modelOverrides are the sessions' /model choices, bounded by maxOverrides. The model
// command sets them; the ContextStage and InferenceStage read them.
type modelOverrides struct {
	mu sync.Mutex
	m  map[echogate.SessionKey]string
}

// get is the session's /model choice ("" none).
func (o *modelOverrides) get(key echogate.SessionKey) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m[key]
}

// set sets the session's choice; "" removes it.
func (o *modelOverrides) set(key echogate.SessionKey, model string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if model == "" {
		delete(o.m, key)
		return
	}
	if o.m == nil {
		o.m = map[echogate.SessionKey]string{}
	}
	if len(o.m) >= maxOverrides {
		for k := range o.m { // drop an arbitrary entry: a bound, not an LRU
			delete(o.m, k)
			break
		}
	}
	o.m[key] = model
}
