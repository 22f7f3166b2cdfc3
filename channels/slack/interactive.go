package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/echogate/echogate"
)

// Approval buttons: the action ids of the prompt's Block Kit buttons and the canonical
// reaction each one stands for. A button press becomes the same InboundEvent as that
// reaction, so it takes the same decision path and authorization.
const approvalBlockID = "echogate_approval"

var buttonReactions = map[string]string{
	"echogate_approve":         echogate.ReactionApprove,
	"echogate_approve_session": echogate.ReactionApproveSession,
	"echogate_deny":            echogate.ReactionDeny,
}

// approvalButtons is the actions block of an approval prompt.
func approvalButtons() slack.Block {
	btn := func(id, label string, style slack.Style) *slack.ButtonBlockElement {
		b := slack.NewButtonBlockElement(id, buttonReactions[id], slack.NewTextBlockObject(slack.PlainTextType, label, true, false))
		if style != "" {
			b = b.WithStyle(style)
		}
		return b
	}
	return slack.NewActionBlock(approvalBlockID,
		btn("echogate_approve", "✅ Approve", slack.StylePrimary),
		btn("echogate_approve_session", "🔁 Approve for this conversation", ""),
		btn("echogate_deny", "❌ Deny", slack.StyleDanger),
	)
}

// withButtons adds the approval buttons to the last message of a prompt. A message rendered as
// text only (too many blocks) keeps its reactions as the only way to decide.
func withButtons(msgs []message) []message {
	if len(msgs) == 0 || len(msgs[len(msgs)-1].blocks) == 0 {
		return msgs
	}
	last := &msgs[len(msgs)-1]
	last.blocks = append(append([]slack.Block(nil), last.blocks...), approvalButtons())
	return msgs
}

// buttonPress is an approval button clicked on one of the bot's messages.
type buttonPress struct {
	team, channel, ts, user, name, actionID, actionTS string
	userTeam                                          string // the presser's own team (Slack Connect)
	responseURL                                       string // answers the presser privately
}

// slashCommand is an invocation of the app's slash command.
type slashCommand struct {
	team, channel, user, name, text, responseURL, triggerID string
}

// interactionJob maps an interaction payload to a job: a press of an approval button. Other
// interactions are not the gateway's (ok false).
func interactionJob(cb slack.InteractionCallback, transport string) (job, bool) {
	if cb.Type != slack.InteractionTypeBlockActions || len(cb.ActionCallback.BlockActions) == 0 {
		return job{}, false
	}
	a := cb.ActionCallback.BlockActions[0]
	if _, ok := pressedReaction(a.ActionID); !ok {
		return job{}, false
	}
	ch, ts := cb.Container.ChannelID, cb.Container.MessageTs
	if ch == "" {
		ch = cb.Channel.ID
	}
	if ts == "" {
		ts = cb.Message.Timestamp
	}
	if ch == "" || ts == "" || cb.User.ID == "" {
		return job{}, false
	}
	bp := &buttonPress{team: cb.Team.ID, channel: ch, ts: ts, user: cb.User.ID, name: cb.User.Name, actionID: a.ActionID, actionTS: a.ActionTs,
		responseURL: cb.ResponseURL, userTeam: cb.User.TeamID}
	if bp.actionTS == "" {
		bp.actionTS = cb.ActionTs
	}
	return job{teamID: cb.Team.ID, inner: bp, transport: transport}, true
}

// commandJob maps a slash command to a job when it is the app's command.
func (c *Channel) commandJob(sc slack.SlashCommand, transport string) (job, bool) {
	if sc.Command != c.cfg.Command || sc.ChannelID == "" || sc.UserID == "" {
		return job{}, false
	}
	return job{teamID: sc.TeamID, transport: transport, inner: &slashCommand{team: sc.TeamID, channel: sc.ChannelID, user: sc.UserID,
		name: sc.UserName, text: sc.Text, responseURL: sc.ResponseURL, triggerID: sc.TriggerID}}, true
}

// normalizeButton maps a button press to the event its reaction would be.
func (c *Channel) normalizeButton(ctx context.Context, team string, b *buttonPress) (echogate.InboundEvent, bool) {
	if b.user == c.identity().UserID {
		return echogate.InboundEvent{}, false
	}
	conv, ok := c.conversationOf(ctx, team, b.channel, b.ts, c.admits(probe(echogate.KindReaction, team, b.channel, b.user, b.userTeam)))
	if !ok {
		c.unmatchedPress(ctx, b)
		return echogate.InboundEvent{}, false
	}
	target := echogate.MessageRef{Platform: echogate.PlatformSlack, Channel: b.channel, ID: b.ts}
	reaction, _ := pressedReaction(b.actionID)
	name, _ := c.names.Get(b.user)
	if name == "" {
		name = b.name
	}
	return echogate.InboundEvent{
		ID:   "button:" + b.channel + ":" + b.ts + ":" + b.user + ":" + b.actionID + ":" + b.actionTS,
		Kind: echogate.KindReaction, Conversation: conv,
		Actor: echogate.Actor{ID: b.user, Name: name, Team: b.userTeam}, Reaction: reaction, Target: target, Message: target,
		ReceivedAt: c.cfg.Clock.Now(),
	}, true
}

// normalizeCommand maps `/echogate usage` to the pipeline's command "/usage", for the
// conversation the user last spoke to the bot in within that channel (the thread a turn of
// theirs runs in), answered through the command's response_url.
func (c *Channel) normalizeCommand(team string, sc *slashCommand) (echogate.InboundEvent, bool) {
	text := strings.TrimSpace(sc.text)
	if text == "" {
		text = "help"
	}
	dm := isDMChannel(sc.channel)
	conv := echogate.ConversationRef{Platform: echogate.PlatformSlack, Workspace: team, Channel: sc.channel, DM: dm}
	if thread, ok := c.lastThread.Get(msgKey(sc.channel, sc.user)); ok {
		conv.Thread = thread
	}
	id := sc.triggerID
	if id == "" {
		id = sc.channel + ":" + sc.user + ":" + c.cfg.Clock.Now().Format("20060102T150405.000000000")
	}
	return echogate.InboundEvent{
		ID: "command:" + id, Kind: echogate.KindDirect, Conversation: conv,
		Actor: echogate.Actor{ID: sc.user, Name: sc.name}, Text: "/" + text,
		Message:     echogate.MessageRef{Platform: echogate.PlatformSlack, Channel: sc.channel},
		Interaction: sc.responseURL, ReceivedAt: c.cfg.Clock.Now(),
	}, true
}

// respondPrivately answers an interaction through its response_url, visible only to the user
// who invoked it. Only Slack's hooks host (or the configured API host, for proxies and tests)
// is accepted, so a payload cannot make the gateway post elsewhere.
func (c *Channel) respondPrivately(ctx context.Context, responseURL, text string) (echogate.MessageRef, error) {
	u, err := url.Parse(responseURL)
	api, _ := url.Parse(c.cfg.APIURL)
	if err != nil || (u.Host != "hooks.slack.com" && (api == nil || u.Host != api.Host)) || (u.Scheme != "https" && u.Host != api.Host) {
		return echogate.MessageRef{}, fmt.Errorf("slack: respond to a command: response_url %q is not Slack's: %w", responseURL, ErrConfig)
	}
	msgs := render(text)
	if len(msgs) == 0 {
		return echogate.MessageRef{}, errors.New("slack: respond to a command: empty text")
	}
	body, _ := json.Marshal(map[string]any{"response_type": "ephemeral", "text": msgs[0].text, "replace_original": false})
	cctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, responseURL, bytes.NewReader(body))
	if err != nil {
		return echogate.MessageRef{}, fmt.Errorf("slack: respond to a command: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return echogate.MessageRef{}, fmt.Errorf("slack: respond to a command: %w", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return echogate.MessageRef{}, fmt.Errorf("slack: respond to a command: HTTP %d from response_url (it expires 30 minutes after the command)", resp.StatusCode)
	}
	return echogate.MessageRef{Platform: echogate.PlatformSlack, Channel: "ephemeral"}, nil
}

// postPrivately shows out to out.PrivateTo only (chat.postEphemeral), in the conversation's
// thread: a short answer meant for one person (who may act, see the pipeline's authority).
func (c *Channel) postPrivately(ctx context.Context, out echogate.Outbound) (echogate.MessageRef, error) {
	ch, thread, err := c.target(out)
	if err != nil {
		return echogate.MessageRef{}, err
	}
	msgs := render(out.Text)
	if len(msgs) == 0 {
		return echogate.MessageRef{}, errors.New("slack: post privately: empty text")
	}
	opts := []slack.MsgOption{slack.MsgOptionText(msgs[0].text, false)}
	if thread != "" {
		opts = append(opts, slack.MsgOptionTS(thread))
	}
	err = c.call(ctx, "chat.postEphemeral", ch, prioHigh, func(ctx context.Context) error {
		_, err := c.api.PostEphemeralContext(ctx, ch, out.PrivateTo, opts...)
		return err
	})
	if err != nil {
		return echogate.MessageRef{}, fmt.Errorf("slack: post privately to %s in %s: %w", out.PrivateTo, ch, err)
	}
	return echogate.MessageRef{Platform: echogate.PlatformSlack, Channel: "ephemeral"}, nil
}

// suggestPrompts offers the configured prompts in a new assistant thread.
func (c *Channel) suggestPrompts(ctx context.Context, ch, thread string) {
	if len(c.cfg.SuggestedPrompts) == 0 || ch == "" || thread == "" {
		return
	}
	prompts := make([]slack.AssistantThreadsPrompt, 0, len(c.cfg.SuggestedPrompts))
	for _, p := range c.cfg.SuggestedPrompts {
		prompts = append(prompts, slack.AssistantThreadsPrompt{Title: p.Title, Message: p.Message})
	}
	err := c.call(ctx, "assistant.threads.setSuggestedPrompts", ch, prioLow, func(ctx context.Context) error {
		return c.api.SetAssistantThreadsSuggestedPromptsContext(ctx, slack.AssistantThreadsSetSuggestedPromptsParameters{
			ChannelID: ch, ThreadTS: thread, Prompts: prompts})
	})
	if err != nil {
		c.log.Warn("slack suggested prompts not set", "slack_channel", ch, "error", err)
	}
}

// maxTitle bounds a thread title taken from its first message.
const maxTitle = 60

// titleThread names a new agent thread (a threaded DM with the app) after its first message,
// once per thread, escaped again as Slack delivered it (a typed "<!here>" stays text).
// Workspaces without the agent experience refuse it; that is logged at debug.
func (c *Channel) titleThread(ctx context.Context, ev echogate.InboundEvent) {
	conv := ev.Conversation
	if !conv.DM || conv.Thread == "" || c.statusOff.Load() || !c.titled.AddIfAbsent(msgKey(conv.Channel, conv.Thread), struct{}{}) {
		return
	}
	title := strings.Join(strings.Fields(ev.Text), " ")
	if len(title) > maxTitle {
		title = strings.TrimSpace(cut(title, maxTitle-1)) + "…"
	}
	if title == "" {
		return
	}
	err := c.call(ctx, "assistant.threads.setTitle", conv.Channel, prioLow, func(ctx context.Context) error {
		return c.api.SetAssistantThreadsTitleContext(ctx, slack.AssistantThreadsSetTitleParameters{ChannelID: conv.Channel, ThreadTS: conv.Thread, Title: slackEscape(title)})
	})
	if err != nil {
		c.log.Debug("slack thread title not set", "slack_channel", conv.Channel, "error", err)
	}
}

// normalizeAgentStop maps Slack's native stop button (agent_session_stopped) to the stop
// command of the thread's session, which stops its running turn like 🛑 or `stop`.
func (c *Channel) normalizeAgentStop(team string, e *slackevents.AgentSessionStoppedEvent, eventID string) (echogate.InboundEvent, bool) {
	if e.Channel == "" || e.User == "" || e.User == c.identity().UserID {
		return echogate.InboundEvent{}, false
	}
	dm := isDMChannel(e.Channel)
	conv := echogate.ConversationRef{Platform: echogate.PlatformSlack, Workspace: team, Channel: e.Channel, DM: dm, Thread: e.ThreadTimestamp}
	id := eventID
	if id == "" {
		id = e.Channel + ":" + e.ThreadTimestamp + ":" + e.EventTimestamp
	}
	return echogate.InboundEvent{
		ID: "agent-stop:" + id, Kind: echogate.KindDirect, Conversation: conv,
		Actor: echogate.Actor{ID: e.User}, Text: "stop",
		Message:    echogate.MessageRef{Platform: echogate.PlatformSlack, Channel: e.Channel, ID: e.EventTimestamp},
		ReceivedAt: c.cfg.Clock.Now(),
	}, true
}
