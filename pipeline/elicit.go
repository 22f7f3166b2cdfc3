package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/ids"
	"github.com/echogate/echogate/tools"
)

// Question is what a tool puts to the person whose turn called it, while the call waits: an
// MCP server's elicitation. Form mode asks for the fields of Schema (buttons where one choice
// answers it, else a typed answer); URL mode sends Link to the person privately.
type Question struct {
	// From names who asks, for the person: "MCP server tracker".
	From string
	// Tool is the registry name of the call that asks.
	Tool string
	// Caller is the call's caller (tools.CallerFrom): the person to ask and where.
	Caller  tools.Caller
	Mode    string // "form" (the default) or "url"
	Message string
	Schema  json.RawMessage // form mode: a flat JSON object schema
	Link    string          // url mode
}

// Question answers (Reply.Action).
const (
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
	ElicitCancel  = "cancel"
)

// Reply is the person's answer: Action is accept, decline or cancel; Content the form's values
// on accept (what it leaves out, the asker's defaults fill).
type Reply struct {
	Action  string
	Content map[string]any
}

// choicePrefix marks the Reaction of a button press that answers a question.
const choicePrefix = "elicit:"

// openQuestion is a form question waiting for its answer.
type openQuestion struct {
	id        string
	q         Question
	form      form
	requester string          // qualified id
	approvers map[string]bool // who else may answer
	prompt    echogate.MessageRef
	answer    chan answered // buffered 1: the first answer wins
}

// answered is a reply and who gave it.
type answered struct {
	reply Reply
	by    string // display name or id
}

// openQuestions are the questions waiting, one per session (a turn runs one tool call's
// question at a time; a second one while the first waits is declined).
type openQuestions struct {
	n  atomic.Int32 // len(m), read without the lock on every Submit
	mu sync.Mutex
	m  map[echogate.SessionKey]*openQuestion
}

func (o *openQuestions) get(key echogate.SessionKey) *openQuestion {
	if o.n.Load() == 0 {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m[key]
}

func (o *openQuestions) add(key echogate.SessionKey, q *openQuestion) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[echogate.SessionKey]*openQuestion{}
	}
	if o.m[key] != nil {
		return false
	}
	o.m[key] = q
	o.n.Store(int32(len(o.m)))
	return true
}

func (o *openQuestions) remove(key echogate.SessionKey, q *openQuestion) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m[key] == q {
		delete(o.m, key)
		o.n.Store(int32(len(o.m)))
	}
}

// Elicit puts q to the person whose turn made the call in q.Caller and returns their answer. It
// blocks until they answer or ctx ends (the caller's bound: then the question is declined and
// the prompt says so). Only that person or an approver of the turn's agent may answer. URL mode
// sends the link where only the person sees it (a Slack ephemeral message or DM, a Discord DM,
// the web chat or terminal) and accepts once it is sent. An error means the question could not
// be put (the caller declines).
func (p *Pipeline) Elicit(ctx context.Context, q Question) (Reply, error) {
	c := q.Caller
	if c.UserID == "" || c.Session == "" {
		return Reply{}, errors.New("the call acts for nobody known: there is no one to ask")
	}
	rep := p.d.Repliers[c.Conversation.Platform]
	if rep == nil {
		return Reply{}, fmt.Errorf("no channel for platform %q to ask on", c.Conversation.Platform)
	}
	if q.Mode == "url" {
		return p.elicitURL(ctx, q)
	}
	f, err := parseForm(q.Schema)
	if err != nil {
		return Reply{}, err
	}
	approvers, event := p.runningTurn(c.Session)
	oq := &openQuestion{id: ids.New("q_"), q: q, form: f, requester: c.UserID, approvers: approvers, answer: make(chan answered, 1)}
	if !p.questions.add(c.Session, oq) {
		return Reply{}, errors.New("another question is waiting for this conversation's answer")
	}
	defer p.questions.remove(c.Session, oq)
	text := p.questionText(ctx, oq)
	if obs := p.caps[c.Conversation.Platform].Observer; obs != nil {
		obs.ObserveTurn(askEvent(q, text, event, p.cfg.Now()))
	} else {
		out := echogate.Outbound{Kind: echogate.OutNotice, Conversation: c.Conversation, Text: text, Session: c.Session, Turn: c.Turn,
			Choices: oq.choices()}
		ref, err := rep.Send(ctx, out)
		if err != nil {
			return Reply{}, fmt.Errorf("post the question: %w", err)
		}
		p.questions.mu.Lock()
		oq.prompt = ref
		p.questions.mu.Unlock()
	}
	log := p.log.With("session", c.Session, "turn", c.Turn, "channel", c.Conversation.Platform)
	log.Info("question put to the person", "from", q.From, "question", oq.id)
	select {
	case a := <-oq.answer:
		p.closeQuestion(ctx, oq, outcomeText(a))
		return a.reply, nil
	case <-ctx.Done():
		log.Info("question declined: no answer in time", "from", q.From, "question", oq.id)
		p.closeQuestion(ctx, oq, "No answer in time: declined.")
		return Reply{Action: ElicitDecline}, nil
	}
}

// runningTurn returns the approvers of the turn running in session (the gateway's without one)
// and the id of the event it handles.
func (p *Pipeline) runningTurn(key echogate.SessionKey) (approvers map[string]bool, event string) {
	sh := p.shardFor(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	approvers = p.approvers
	if mb := sh.boxes[key]; mb != nil && mb.cur != nil {
		event = mb.cur.event
		if o := mb.cur.owner.Load(); o != nil && o.approvers != nil {
			approvers = o.approvers
		}
	}
	return approvers, event
}

// askEvent is the turn event that shows a tool call's question to an observing channel (the
// web chat, the terminal), under the turn's event so the request that started it shows it. It
// names the asking call's tool and no call id: ask_user's question (which pauses the turn)
// carries its call, this one waits inside the call.
func askEvent(q Question, text, event string, now time.Time) echogate.TurnEvent {
	tool := q.Tool
	if tool == "" {
		tool = q.From
	}
	return echogate.TurnEvent{Type: echogate.TurnAsk, Session: q.Caller.Session, Turn: q.Caller.Turn, Tool: tool, Text: text, EventID: event, Time: now}
}

// questionText is the prompt: who asks, the question, the fields and how to answer.
func (p *Pipeline) questionText(ctx context.Context, oq *openQuestion) string {
	var b strings.Builder
	fmt.Fprintf(&b, "❓ %s asks: %s", oq.q.From, strings.TrimSpace(oq.q.Message))
	b.WriteString(oq.form.describe())
	switch {
	case oq.form.options() != nil:
		b.WriteString("\nPress a button, or reply with your answer, or `decline`.")
	case len(oq.form.fields) == 0:
		b.WriteString("\nReply `accept` or `decline`.")
	case len(oq.form.fields) == 1:
		b.WriteString("\nReply with the value, or `decline`.")
	default:
		b.WriteString("\nReply with `name: value` lines, or `decline`.")
	}
	if len(oq.form.fields) > 0 && len(oq.form.missing(nil)) == 0 {
		b.WriteString(" `accept` takes the defaults.")
	}
	b.WriteString(" Only the person who asked for this, or an approver, can answer")
	if dl, ok := ctx.Deadline(); ok {
		fmt.Fprintf(&b, "; no answer within %s declines", dl.Sub(p.cfg.Now()).Round(time.Second))
	}
	b.WriteString(".")
	return b.String()
}

// choices are the question's buttons: one per option of a one-field form, else Accept when the
// defaults answer it; and Decline.
func (oq *openQuestion) choices() []echogate.Choice {
	var out []echogate.Choice
	if opts := oq.form.options(); opts != nil {
		for i, o := range opts {
			out = append(out, echogate.Choice{Value: choicePrefix + "v" + strconv.Itoa(i), Label: o})
		}
	} else if len(oq.form.missing(nil)) == 0 {
		label := "Accept"
		if len(oq.form.fields) > 0 {
			label = "Accept the defaults"
		}
		out = append(out, echogate.Choice{Value: choicePrefix + ElicitAccept, Label: label})
	}
	return append(out, echogate.Choice{Value: choicePrefix + ElicitDecline, Label: "Decline"})
}

// pressed maps a button's value to the reply it stands for.
func (oq *openQuestion) pressed(value string) (Reply, bool) {
	v := strings.TrimPrefix(value, choicePrefix)
	switch v {
	case ElicitAccept:
		return Reply{Action: ElicitAccept, Content: map[string]any{}}, true
	case ElicitDecline:
		return Reply{Action: ElicitDecline}, true
	}
	i, err := strconv.Atoi(strings.TrimPrefix(v, "v"))
	opts := oq.form.options()
	if !strings.HasPrefix(v, "v") || err != nil || i < 0 || i >= len(opts) {
		return Reply{}, false
	}
	val, err := oq.form.fields[0].convert(opts[i])
	if err != nil {
		return Reply{}, false
	}
	return Reply{Action: ElicitAccept, Content: map[string]any{oq.form.fields[0].Name: val}}, true
}

// closeQuestion edits the prompt (where the platform can) to show how the question ended, so
// its buttons do not invite another answer.
func (p *Pipeline) closeQuestion(ctx context.Context, oq *openQuestion, outcome string) {
	p.questions.mu.Lock()
	ref := oq.prompt
	p.questions.mu.Unlock()
	ed := p.caps[oq.q.Caller.Conversation.Platform].Editor
	if ref.IsZero() || ed == nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
	defer cancel()
	text := fmt.Sprintf("❓ %s asked: %s\n%s", oq.q.From, strings.TrimSpace(oq.q.Message), outcome)
	if err := ed.Edit(cctx, ref, text); err != nil {
		p.log.Warn("pipeline: edit an answered question", "session", oq.q.Caller.Session, "err", err)
	}
}

// elicitURL sends the link to the person privately; accepted once sent.
func (p *Pipeline) elicitURL(ctx context.Context, q Question) (Reply, error) {
	c := q.Caller
	text := fmt.Sprintf("🔗 %s asks you to open this link (it is for you alone): %s", q.From, q.Link)
	if m := strings.TrimSpace(q.Message); m != "" {
		text = fmt.Sprintf("🔗 %s: %s\nOpen this link (it is for you alone): %s", q.From, m, q.Link)
	}
	if obs := p.caps[c.Conversation.Platform].Observer; obs != nil {
		// The web chat and the terminal are one person's conversation.
		_, event := p.runningTurn(c.Session)
		obs.ObserveTurn(askEvent(q, text, event, p.cfg.Now()))
		return Reply{Action: ElicitAccept}, nil
	}
	if err := p.sendPrivately(ctx, c.Conversation, c.Session, c.UserID, text); err != nil {
		return Reply{}, fmt.Errorf("send the link privately: %w", err)
	}
	return Reply{Action: ElicitAccept}, nil
}

// sendPrivately shows text to user (qualified id) alone: in a DM conversation there; on
// Discord, whose channels show everything to everyone, in a DM (an Outbound with PrivateTo and
// no channel); elsewhere as a message only they see (Slack's ephemeral messages).
func (p *Pipeline) sendPrivately(ctx context.Context, conv echogate.ConversationRef, session echogate.SessionKey, user, text string) error {
	rep := p.d.Repliers[conv.Platform]
	if rep == nil {
		return fmt.Errorf("no channel for platform %q", conv.Platform)
	}
	_, bare, _ := strings.Cut(user, ":")
	out := echogate.Outbound{Kind: echogate.OutNotice, Conversation: conv, Text: text, Session: session}
	switch {
	case conv.DM:
	case conv.Platform == echogate.PlatformDiscord:
		out.Conversation = echogate.ConversationRef{Platform: conv.Platform, DM: true}
		out.PrivateTo = bare
	default:
		out.PrivateTo = bare
	}
	_, err := rep.Send(ctx, out)
	return err
}

// outcomeText is how an answered question's prompt ends.
func outcomeText(a answered) string {
	switch a.reply.Action {
	case ElicitDecline:
		return "Declined by " + a.by + "."
	case ElicitCancel:
		return "Cancelled by " + a.by + "."
	}
	return "Answered by " + a.by + "."
}
