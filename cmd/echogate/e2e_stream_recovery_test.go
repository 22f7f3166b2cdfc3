package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/echogate/echogate/channels/discord"
)

// TestE2EKillMidStreamLeavesOneMessage: the real binary is SIGKILLed while it streams an answer
// (Slack: a native chat.startStream left open; Discord: an edited message), after the streamed
// message was recorded. After the restart the replayed event's answer goes into that same
// message: the conversation holds exactly one bot message, with the full answer, not the cut
// one above a second.
func TestE2EKillMidStreamLeavesOneMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	for _, pl := range platforms {
		t.Run(pl.name, func(t *testing.T) {
			t.Parallel()
			model := newScriptedModel(t)
			p := pl.make(t)
			vars := model.vars()
			for k, v := range p.vars {
				vars[k] = v
			}
			vars["ECHOGATE_DATA_DIR"] = t.TempDir()
			vars["ECHOGATE_LOG_LEVEL"] = "debug" // "streamed message recorded"
			ready := func(s string) bool { return s != "" && !strings.HasPrefix(s, "not ready") }

			g1 := startBinaryGateway(t, vars, "")
			waitReadyz(t, g1.base, http.StatusOK, p.readyEntry, ready)
			tag := "[cut-" + pl.name + "]"
			c := p.newConv(t, tag)
			text := "stream a longer answer " + tag
			full := echoText + text
			p.open(t, c, p.requester, text) // the model holds after the first fragments
			var partial botMsg
			p.waitFor(t, "the partial streamed answer", func() bool {
				for _, m := range p.bot(c) {
					// Discord shows the turn's activity on a line below the streamed text.
					v, _, _ := strings.Cut(discord.VisibleText(m.Text), "\n")
					if v != "" && v != full && strings.HasPrefix(full, v) {
						partial = m
						return true
					}
				}
				return false
			})
			g1.logs.waitLine(t, "streamed message recorded", partial.ID)
			g1.kill()
			model.openStream() // the answer after the restart is not held

			g2 := startBinaryGateway(t, vars, "")
			waitReadyz(t, g2.base, http.StatusOK, p.readyEntry, ready)
			p.waitFor(t, "the full answer", func() bool {
				for _, m := range p.bot(c) {
					if discord.VisibleText(m.Text) == full {
						return true
					}
				}
				return false
			})
			g2.logs.waitLine(t, "turn finished")
			g2.stop() // anything more would be posted by then
			msgs := p.bot(c)
			if len(msgs) != 1 || discord.VisibleText(msgs[0].Text) != full || msgs[0].ID != partial.ID {
				t.Errorf("bot messages after the restart:\n%s\nwant exactly one, %q, in the partial message %s", c.transcript(), full, partial.ID)
			}
			if !strings.Contains(g2.logs.String(), "the new answer goes into that message") {
				t.Errorf("the restart did not continue the interrupted turn's message")
			}
		})
	}
}
