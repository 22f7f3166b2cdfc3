package web

import (
	"time"

	"testing"

	"github.com/echogate/echogate"
)

// Two pauses of one session whose tool calls share an id (models that number their calls per
// conversation reuse "call_0"), the first decided through another replica so this one still
// holds its prompt: the second approval_request joins the second prompt, not the first, and a
// decision by call id goes to the newest prompt of that call. Found by the rolling deploy test:
// the decision went to the first prompt (m1), the pipeline ignored it as a reaction on another
// message, and the second pause was never decided.
func TestPromptsOfAReusedCallID(t *testing.T) {
	s := &session{id: "s"}
	first := echogate.MessageRef{Platform: echogate.PlatformWeb, Channel: "s", ID: "m1"}
	second := echogate.MessageRef{Platform: echogate.PlatformWeb, Channel: "s", ID: "m5"}

	s.attachPromptRef(first, echogate.Outbound{Kind: echogate.OutApprovalPrompt, Turn: "t1", Text: "run it?"}, time.Time{})
	s.attachPromptCall(echogate.TurnEvent{Type: echogate.TurnApprovalRequest, Turn: "t1", CallID: "call_0", Tool: "run_command"})
	// The first was decided elsewhere; the session's next turn pauses on a call with the same id.
	s.attachPromptRef(second, echogate.Outbound{Kind: echogate.OutApprovalPrompt, Turn: "t2", Text: "run it again?"}, time.Time{})
	s.attachPromptCall(echogate.TurnEvent{Type: echogate.TurnApprovalRequest, Turn: "t2", CallID: "call_0", Tool: "run_command"})

	if p := s.promptByCall("call_0"); p == nil || p.ref != second || p.turn != "t2" {
		t.Fatalf("promptByCall(call_0) = %+v, want the second prompt (%s, turn t2)", p, second.ID)
	}
	if p := s.promptByRef("m1"); p == nil || p.turn != "t1" || p.callID != "call_0" {
		t.Errorf("promptByRef(m1) = %+v, want the first prompt, unchanged (turn t1, call_0)", p)
	}
}
