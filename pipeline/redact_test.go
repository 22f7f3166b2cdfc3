package pipeline_test

import (
	"context"
	"strings"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/internal/redact"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/tools"
)

// Fake secrets: a shape every deployment masks, and a configured value only this one knows.
const (
	slackShaped = "xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
	ownSecret   = "operator-configured-password-42"
)

func withRedactor(d *pipeline.Deps) { d.Redactor = redact.New([]string{ownSecret}) }

// everything returns all text the replier received: posts, stream deltas, edits and events.
func everything(rep *pipelinetest.Replier) string {
	var b strings.Builder
	for _, p := range rep.Posts() {
		b.WriteString(p.Text + "\x00" + p.Joined() + "\x00" + strings.Join(p.Appended, "\x00") + "\x00")
	}
	for _, e := range rep.Events() {
		b.WriteString(e.Text + "\x00" + e.Args + "\x00")
	}
	return b.String()
}

// Issue 36, finding 2: the bot posted SLACK_BOT_TOKEN and OPENAI_API_KEY into the channel. No
// outbound text (streamed deltas split anywhere, the final post, turn events, a plain post) may
// carry a secret's shape or a configured secret's value.
func TestOutboundTextNeverCarriesASecret(t *testing.T) {
	answer := "Here it is: SLACK_BOT_TOKEN=" + slackShaped + " and the password " + ownSecret + ". Done."
	for name, o := range map[string]struct {
		stream   bool
		fragment int
	}{
		"streamed in 4-rune deltas": {true, 4},
		"streamed in 7-rune deltas": {true, 7},
		"streamed in 1-rune deltas": {true, 1},
		"posted at the end":         {false, 4},
	} {
		t.Run(name, func(t *testing.T) {
			deps := withRedactor
			if !o.stream {
				deps = func(d *pipeline.Deps) {
					withRedactor(d)
					plain := d.Repliers[echogate.PlatformWeb].(pipelinetest.StreamingReplier).Replier
					d.Repliers = map[string]pipeline.Replier{echogate.PlatformWeb: plain}
				}
			}
			h := start(t, opts{deps: deps}, agenttest.Step{Text: answer, FragmentSize: o.fragment})
			h.submit(msg("s1", "ann", "print the tokens"))
			done := h.waitDone()
			all := everything(h.rep) + done.Text
			for _, secret := range []string{slackShaped, ownSecret} {
				if strings.Contains(all, secret) {
					t.Errorf("outbound text carries %q: posts %+v", secret, h.rep.Posts())
				}
			}
			if posts := h.rep.Posts(); len(posts) != 1 || posts[0].Text != "Here it is: SLACK_BOT_TOKEN=[redacted] and the password [redacted]. Done." {
				t.Errorf("posts = %+v, want one post with both secrets replaced by [redacted]", posts)
			}
			if o.stream {
				if got := h.rep.Posts()[0].Joined(); !strings.HasPrefix(got, "Here it is: SLACK_BOT_TOKEN=[redacted]") {
					t.Errorf("streamed deltas joined = %q, want the token masked in the stream too", got)
				}
			}
		})
	}
}

// A tool's result is redacted before the model reads it (and before it is stored or shown).
func TestToolResultsAreRedactedBeforeTheModel(t *testing.T) {
	env := newTool("run_command", tools.Safe, "$ cat /proc/1/environ\nOPENAI_API_KEY=sk-proj-AbCdEfGhIjKlMnOpQrSt_uVwXyZ-0123456789abcdefGHIJ\x00PASSWORD="+ownSecret)
	h := start(t, opts{tools: []tools.Tool{env}, deps: withRedactor},
		agenttest.CallTool("run_command", `{}`), agenttest.Reply("ok"))
	h.submit(msg("s1", "ann", "go"))
	h.waitDone()
	reqs := h.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model saw %d requests, want 2", len(reqs))
	}
	var toolMsg string
	for _, m := range reqs[1].Messages {
		if m.Role == echogate.RoleTool {
			toolMsg = m.Content
		}
	}
	if strings.Contains(toolMsg, "sk-proj-") || strings.Contains(toolMsg, ownSecret) || !strings.Contains(toolMsg, "OPENAI_API_KEY=[redacted]") {
		t.Errorf("tool result the model read = %q, want the key and the configured secret masked", toolMsg)
	}
	if all := everything(h.rep); strings.Contains(all, ownSecret) {
		t.Errorf("turn events carry the configured secret: %q", all)
	}
	if got := strings.Join(h.transcript("s1"), "|"); strings.Contains(got, ownSecret) {
		t.Errorf("transcript = %q, want the tool result stored redacted", got)
	}
}

// Without a configured Redactor the shapes are still masked.
func TestOutboundRedactionIsOnByDefault(t *testing.T) {
	h := start(t, opts{}, agenttest.Reply("token "+slackShaped))
	h.submit(msg("s1", "ann", "hi"))
	if d := h.waitDone(); strings.Contains(d.Text+everything(h.rep), slackShaped) {
		t.Fatalf("posts = %+v, want the Slack token masked with no Redactor configured", h.rep.Posts())
	}
}

// capsDecorator is a decorator like cmd's tracing replier: Send, and the inner capabilities
// stated through Caps (no Unwrap: every capability comes through Caps).
type capsDecorator struct{ inner pipeline.Replier }

func (u capsDecorator) Send(ctx context.Context, out echogate.Outbound) (echogate.MessageRef, error) {
	return u.inner.Send(ctx, out)
}
func (u capsDecorator) Caps() pipeline.Caps { return pipeline.CapsOf(u.inner) }

// The redaction decorator keeps the channel's activity view, also under another decorator
// that states its capabilities through Caps.
func TestActivityIsShownThroughDecorators(t *testing.T) {
	ar := &activityReplier{}
	h := start(t, opts{deps: func(d *pipeline.Deps) {
		ar.StreamingReplier = pipelinetest.StreamingReplier{Replier: pipelinetest.NewReplier(echogate.PlatformWeb)}
		d.Repliers[echogate.PlatformWeb] = capsDecorator{ar}
	}}, agenttest.Reply("fine"))
	h.rep = ar.Replier
	h.submit(msg("s1", "ann", "hi"))
	h.waitDone()
	h.stop()
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if len(ar.shown) == 0 || ar.ended != 1 {
		t.Errorf("activity shown %d times, ended %d, want it shown and ended once", len(ar.shown), ar.ended)
	}
}
