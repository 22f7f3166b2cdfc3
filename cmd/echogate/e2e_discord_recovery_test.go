package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/echogate/echogate/channels/discord"
)

// TestE2EDiscordPostedAnswerIsFoundAtRecovery: the real binary is killed with SIGKILL after
// Discord took the final form of an answer but before the response came back (so before the
// turn's end was written). Started again after Discord's nonce window has passed, recovery finds
// the answer in the channel by its turn's marker and records it: the message is answered once.
// Both shapes of a Discord answer are covered: one that arrived in one piece (posted marked at
// once, or posted and then marked by the final edit, as the stream's first flush and the end of
// the answer fall) and one streamed in pieces (posted, edited as it grew, then marked by the
// final edit).
func TestE2EDiscordPostedAnswerIsFoundAtRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	for _, tc := range []struct {
		name, text string
		streamed   bool // the model holds after its first fragments until the test lets it go on
	}{
		{"one piece", "hello", false},
		{"streamed in pieces", "stream a longer answer", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := newScriptedModel(t)
			p, srv := newDiscordPlatform(t)
			vars := model.vars()
			for k, v := range p.vars {
				vars[k] = v
			}
			vars["ECHOGATE_DATA_DIR"] = t.TempDir()
			ready := func(s string) bool { return s != "" && !strings.HasPrefix(s, "not ready") }

			g1 := startBinaryGateway(t, vars, "")
			waitReadyz(t, g1.base, http.StatusOK, p.readyEntry, ready)
			tag := "[posted-then-killed-" + strings.ReplaceAll(tc.name, " ", "-") + "]"
			full := echoText + tc.text + " " + tag
			c := p.newConv(t, tag)
			marked := func(content string) bool {
				return strings.Contains(content, tag) && discord.VisibleText(content) != content
			}
			// Hold the response to the answer's final post or edit (the one carrying the marker).
			srv.StallWhen(marked)
			p.open(t, c, p.requester, tc.text+" "+tag)
			if tc.streamed {
				p.waitFor(t, "the partial streamed answer", func() bool {
					for _, m := range srv.BotMessages(c.ch) {
						if v, _, _ := strings.Cut(m.Content, "\n"); v != "" && v != full && strings.HasPrefix(full, v) {
							return true
						}
					}
					return false
				})
				model.openStream()
			}
			var final discordMsg
			p.waitFor(t, "the marked answer", func() bool {
				for _, m := range srv.BotMessages(c.ch) {
					if marked(m.Content) {
						final = discordMsg{id: m.ID, edits: len(m.EditedAt)}
						return true
					}
				}
				return false
			})
			if tc.streamed && final.edits == 0 {
				t.Errorf("the marked answer was posted, not edited in: this case covers the final edit of a stream")
			}
			g1.kill()
			srv.ReleaseStalls()
			srv.ExpireNonces() // a repeated create would post again now: only the lookup prevents it
			calls := len(model.fake.ChatRequests())

			g2 := startBinaryGateway(t, vars, "")
			waitReadyz(t, g2.base, http.StatusOK, p.readyEntry, ready)
			g2.logs.waitLine(t, "interrupted turn had posted its answer; not answering again")
			g2.stop() // a second answer would be posted by then
			assertOnce(t, c, full)
			if msgs := srv.BotMessages(c.ch); len(msgs) != 1 || msgs[0].ID != final.id {
				t.Errorf("bot messages = %d, want the one answer (message %s)", len(msgs), final.id)
			}
			if got := len(model.fake.ChatRequests()); got != calls {
				t.Errorf("model calls after the restart = %d, want 0 (the answer was recorded, not made again)", got-calls)
			}
		})
	}
}

// discordMsg is what the test keeps of the answer's message.
type discordMsg struct {
	id    string
	edits int
}
