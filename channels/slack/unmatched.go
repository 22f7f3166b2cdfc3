package slack

import (
	"context"

	"github.com/slack-go/slack"
)

// unmatchedText tells the presser of an approval button whose prompt no session could be
// found for (not in memory, not in the store's pending approvals, not found on Slack) that
// nothing was decided.
const unmatchedText = "⚠️ I couldn't match this button to a pending approval (the prompt may be outdated, " +
	"or Slack could not be reached to look it up), so nothing was approved or denied. " +
	"Try again in a moment, or reply `approve` / `deny` in the prompt's thread."

// unmatchedPress answers a press whose prompt's conversation cannot be found, privately: through
// its response_url, else with chat.postEphemeral in the prompt's channel. It does not fail the
// press (it is acknowledged as handled: there is nothing to retry).
func (c *Channel) unmatchedPress(ctx context.Context, b *buttonPress) {
	c.log.Warn("slack button press not matched to a session; telling the presser", "message", b.ts, "slack_channel", b.channel, "user", b.user)
	if b.responseURL != "" {
		_, err := c.respondPrivately(ctx, b.responseURL, unmatchedText)
		if err == nil {
			return
		}
		c.log.Warn("slack unmatched press: response_url answer failed; trying an ephemeral message", "error", err)
	}
	err := c.call(ctx, "chat.postEphemeral", b.channel, prioHigh, func(ctx context.Context) error {
		_, err := c.api.PostEphemeralContext(ctx, b.channel, b.user, slack.MsgOptionText(unmatchedText, false))
		return err
	})
	if err != nil {
		c.log.Warn("slack unmatched press: the presser could not be told", "error", err)
	}
}
