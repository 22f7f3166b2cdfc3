package slack

import (
	"context"
	"fmt"
	"time"

	"github.com/slack-go/slack"

	"github.com/echogate/echogate"
)

// replyLookback is how far back FindReply searches a conversation.
const replyLookback = 24 * time.Hour

// replyMetadata is the metadata of the bot's posts: a reply id per post (for the lookup after
// an ambiguous failure) and, on the last message of a turn's answer, the turn's id.
func replyMetadata(replyID, turn string) slack.SlackMetadata {
	payload := map[string]any{}
	if replyID != "" {
		payload["reply_id"] = replyID
	}
	if turn != "" {
		payload["turn"] = turn
	}
	return slack.SlackMetadata{EventType: "echogate_reply", EventPayload: payload}
}

// finalTurn is the turn whose answer out is, or "" when out is not a turn's answer.
func finalTurn(out echogate.Outbound) string {
	if out.Kind != echogate.OutReply {
		return ""
	}
	return out.Turn
}

// markFinal marks the last of msgs as the end of out's answer.
func markFinal(msgs []message, out echogate.Outbound) []message {
	if turn := finalTurn(out); turn != "" && len(msgs) > 0 {
		msgs[len(msgs)-1].turn = turn
	}
	return msgs
}

// FindReply looks in the conversation for the end of the answer turn posted (the message whose
// metadata names it), so that recovery after a crash does not answer an event twice. found is
// false when there is none within the last day. It blocks on Slack's API (conversations.replies
// in a thread, conversations.history otherwise), with the channel's retries.
func (c *Channel) FindReply(ctx context.Context, conv echogate.ConversationRef, turn string) (echogate.MessageRef, string, bool, error) {
	ch, thread := conv.Channel, conv.Thread
	oldest := slackTS(c.cfg.Clock.Now().Add(-replyLookback))
	var (
		ref   echogate.MessageRef
		text  string
		found bool
	)
	match := func(msgs []slack.Message) {
		for _, m := range msgs {
			if m.Metadata.EventType == "echogate_reply" && fmt.Sprint(m.Metadata.EventPayload["turn"]) == turn {
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
