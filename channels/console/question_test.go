package console

import (
	"strings"
	"testing"

	"github.com/echogate/echogate"
)

// TestRunToolQuestionAnsweredAtTheTerminal: a question a tool call puts while the turn runs is
// printed, the next line goes at once as its answer (not queued behind the turn), the answer's
// acknowledgement does not end the turn, and lines after the call ended wait for the turn again.
func TestRunToolQuestionAnsweredAtTheTerminal(t *testing.T) {
	p := newPipeline()
	it := startRun(t, Config{Session: "main"}, p)
	it.typeLine(t, "order a shirt")
	ev := p.next(t)
	it.ch.ObserveTurn(te(echogate.TurnStarted, ev, "t1", ""))
	it.ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnAsk, Session: ev.SessionKey(), Turn: "t1", Tool: "shop__ask", Text: "❓ MCP server shop asks: Which size?"})
	it.flush(t)
	if got := it.out.String(); !strings.Contains(got, "Which size?") {
		t.Fatalf("stdout = %q, want the question", got)
	}
	it.typeLine(t, "large")
	ans := p.next(t)
	if ans.Text != "large" || ans.Kind != echogate.KindDirect {
		t.Fatalf("event after the question = %+v, want the answer sent at once", ans)
	}
	it.ch.ObserveTurn(te(echogate.TurnStarted, ans, "c_1", ""))
	it.ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDone, Session: ev.SessionKey(), Turn: "c_1", EventID: ans.ID, Text: "Answer sent to MCP server shop.", Status: "done"})
	it.ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnToolResult, Session: ev.SessionKey(), Turn: "t1", Tool: "shop__ask", Text: "large"})
	it.typeLine(t, "and then?") // the call ended: this waits for the turn
	it.ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDone, Session: ev.SessionKey(), Turn: "t1", EventID: ev.ID, Text: "Ordered a large shirt.", Status: "done"})
	next := p.next(t)
	if next.Text != "and then?" {
		t.Fatalf("event after the turn = %+v, want the queued line", next)
	}
	it.ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDone, Session: ev.SessionKey(), Turn: "t2", EventID: next.ID, Text: "Nothing more.", Status: "done"})
	it.in.Close()
	_ = it.wait(t)
	if got := it.out.String(); !strings.Contains(got, "Ordered a large shirt.") {
		t.Errorf("stdout = %q, want the turn's answer after the question", got)
	}
}
