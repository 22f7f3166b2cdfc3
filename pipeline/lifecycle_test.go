package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/tools"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Every path a turn takes (an answer, tools, an approval approved and denied, a question
// answered, a model failure) moves through legal transitions only, and the turn events users
// see follow from them: start first, then the pause or the end.
func TestTurnsTakeOnlyLegalTransitions(t *testing.T) {
	var logs lockedBuffer
	del := newTool("delete_file", tools.Sensitive, "deleted")
	clock := newTool("current_time", tools.Safe, "noon")
	ask := &funcTool{spec: tools.Spec{Name: "ask_user", Safety: tools.Safe}, fn: func(ctx context.Context, args json.RawMessage) (tools.Result, error) {
		return tools.Result{}, &tools.AskUserError{Question: "Which city?"}
	}}
	h := start(t, opts{tools: []tools.Tool{del, clock, ask}, deps: func(d *pipeline.Deps) {
		d.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}},
		agenttest.Reply("plain"),
		agenttest.CallTool("current_time", `{}`), agenttest.Reply("it is noon"),
		agenttest.CallTool("delete_file", `{}`), agenttest.Reply("deleted it"),
		agenttest.CallTool("delete_file", `{}`), agenttest.Reply("did not delete"),
		agenttest.CallTool("ask_user", `{"question":"Which city?"}`), agenttest.Reply("Oslo"),
		agenttest.Fail(errors.New("model down")))
	want := []string{"done", "done", "paused", "done", "paused", "done", "paused", "done", "error"}
	var got []string
	step := func(ev echogate.InboundEvent) {
		h.submit(ev)
		got = append(got, h.waitDone().Status)
	}
	step(msg("s1", "ann", "hi"))
	step(msg("s1", "ann", "time?"))
	step(msg("s1", "ann", "delete"))
	step(reaction("s1", "ann", echogate.ReactionApprove, promptOf(t, h).Ref))
	step(msg("s1", "ann", "delete again"))
	step(reaction("s1", "ann", echogate.ReactionDeny, lastPrompt(h).Ref))
	step(msg("s1", "ann", "weather?"))
	step(msg("s1", "ann", "Oslo"))
	step(msg("s1", "ann", "and now?"))
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("statuses = %v, want %v", got, want)
	}
	if strings.Contains(logs.String(), "refused turn transition") {
		t.Errorf("illegal transitions attempted:\n%s", grepLines(logs.String(), "refused turn transition"))
	}
	// Per turn: start before anything else, exactly one done, last.
	byTurn := map[string][]echogate.TurnEventType{}
	for _, ev := range h.rep.Events() {
		byTurn[ev.Turn] = append(byTurn[ev.Turn], ev.Type)
	}
	for turn, types := range byTurn {
		if types[0] != echogate.TurnStarted || types[len(types)-1] != echogate.TurnDone {
			t.Errorf("turn %s events %v: want start first and done last", turn, types)
		}
	}
}

func lastPrompt(h *harness) (p struct{ Ref echogate.MessageRef }) {
	for _, post := range h.rep.Posts() {
		if post.Out.Kind == echogate.OutApprovalPrompt {
			p.Ref = post.Ref
		}
	}
	return p
}

func grepLines(s, part string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, part) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
