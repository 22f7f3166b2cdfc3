package slack

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/echogate/echogate"
)

// replyLookback is how far back FindReply searches a conversation.
const replyLookback = 24 * time.Hour

// replyMetadata is the metadata of the bot's posts: a reply id per post (for the lookup after
// an ambiguous failure) and, on the last message of a turn's answer or approval prompt, the
// turn's id and the kind ("reply", "approval_prompt"), packed as turn "/" kind.
func replyMetadata(replyID, turn string) slack.SlackMetadata {
	payload := map[string]any{}
	if replyID != "" {
		payload["reply_id"] = replyID
	}
	if t, kind, ok := strings.Cut(turn, "/"); ok {
		payload["turn"], payload["kind"] = t, kind
	}
	return slack.SlackMetadata{EventType: "echogate_reply", EventPayload: payload}
}

// finalTurn is the turn and kind ("t_…/reply") out ends, or "" when out is neither a turn's
// answer nor its approval prompt.
func finalTurn(out echogate.Outbound) string {
	if out.Turn == "" {
		return ""
	}
	if k := kindOf(out.Kind); k != "" {
		return out.Turn + "/" + k
	}
	return ""
}

func kindOf(k echogate.OutboundKind) string {
	switch k {
	case echogate.OutReply:
		return "reply"
	case echogate.OutApprovalPrompt:
		return "approval_prompt"
	}
	return ""
}

// markFinal marks the last of msgs as the end of out.
func markFinal(msgs []message, out echogate.Outbound) []message {
	if turn := finalTurn(out); turn != "" && len(msgs) > 0 {
		msgs[len(msgs)-1].turn = turn
	}
	return msgs
}

// FindReply looks in the conversation for the last message of kind that turn posted (its
// metadata names the turn), so that recovery after a crash does not post it twice. found is
// false when there is none within the last day. It blocks on Slack's API (conversations.replies
// in a thread, conversations.history otherwise), with the channel's retries.
func (c *Channel) FindReply(ctx context.Context, conv echogate.ConversationRef, turn string, kind echogate.OutboundKind) (echogate.MessageRef, string, bool, error) {
	want := kindOf(kind)
	ch, thread := conv.Channel, conv.Thread
	oldest := slackTS(c.cfg.Clock.Now().Add(-replyLookback))
	var (
		ref   echogate.MessageRef
		text  string
		found bool
	)
	match := func(msgs []slack.Message) {
		for _, m := range msgs {
			p := m.Metadata.EventPayload
			if m.Metadata.EventType == "echogate_reply" && fmt.Sprint(p["turn"]) == turn && fmt.Sprint(p["kind"]) == want {
				ref, text, found = echogate.MessageRef{Platform: echogate.PlatformSlack, Channel: ch, ID: m.Timestamp}, m.Text, true
			}
		}
	}
	err := c.call(ctx, "conversations lookup", ch, prioHigh, func(ctx context.Context) error {
		if thread != "" {
			msgs, _, _, err := c.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
				ChannelID: ch, Timestamp: thread, Oldest: oldest, Limit: 1000, Inclusive: true, IncludeAllMetadata: true})
			if code, ok := apiCode(err); ok && code == "thread_not_found" {
				return nil
			}
			if err == nil {
				match(msgs)
			}
			return err
		}
		h, err := c.api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
			ChannelID: ch, Oldest: oldest, Limit: 1000, Inclusive: true, IncludeAllMetadata: true})
		if err == nil {
			match(h.Messages)
		}
		return err
	})
	if err != nil {
		return echogate.MessageRef{}, "", false, fmt.Errorf("slack: find the answer of turn %s in %s: %w", turn, ch, err)
	}
	return ref, text, found, nil
}
