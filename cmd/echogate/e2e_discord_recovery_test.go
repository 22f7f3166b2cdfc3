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
func TestE2EDiscordPostedAnswerIsFoundAtRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
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
	const tag = "[posted-then-killed]"
	c := p.newConv(t, tag)
	// Hold the response to the answer's final post or edit (the one carrying the marker).
	srv.StallWhen(func(content string) bool {
		return strings.Contains(content, tag) && discord.VisibleText(content) != content
	})
	p.open(t, c, p.requester, "hello "+tag)
	p.waitFor(t, "the marked answer", func() bool {
		for _, m := range srv.BotMessages(c.ch) {
			if strings.Contains(m.Content, tag) && discord.VisibleText(m.Content) != m.Content {
				return true
			}
		}
		return false
	})
	g1.kill()
	srv.ReleaseStalls()
	srv.ExpireNonces() // a repeated create would post again now: only the lookup prevents it
	calls := len(model.fake.ChatRequests())

	g2 := startBinaryGateway(t, vars, "")
	waitReadyz(t, g2.base, http.StatusOK, p.readyEntry, ready)
	g2.logs.waitLine(t, "interrupted turn had posted its answer; not answering again")
	g2.stop() // a second answer would be posted by then
	assertOnce(t, c, echoText+"hello "+tag)
	if got := len(srv.BotMessages(c.ch)); got != 1 {
		t.Errorf("bot messages = %d, want the one answer", got)
	}
	if got := len(model.fake.ChatRequests()); got != calls {
		t.Errorf("model calls after the restart = %d, want 0 (the answer was recorded, not made again)", got-calls)
	}
}
