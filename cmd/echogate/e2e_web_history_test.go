package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestE2EWebHistorySurvivesRestart: a web session's turns (a plain answer, a tool call that was
// approved, a call still waiting for approval) are all in GET /api/chat/history after the
// gateway restarts on the same data dir, in order, with the tool rows and the pending approval
// naming who asked.
func TestE2EWebHistorySurvivesRestart(t *testing.T) {
	model := newScriptedModel(t)
	vars := model.vars()
	vars["ECHOGATE_DATA_DIR"] = t.TempDir()
	g1 := startGateway(t, vars, approvalConfig)
	postChat(t, g1.base, "hist", "hello [hist]")
	call := approvalCallID(t, postChat(t, g1.base, "hist", "what time is it? [hist]"))
	body, _ := json.Marshal(map[string]string{"session": "hist", "user": "u1", "call_id": call, "decision": "approve"})
	resp, err := http.Post(g1.base+"/api/chat/approve", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	readSSE(t, resp.Body)
	resp.Body.Close()
	pending := approvalCallID(t, postChat(t, g1.base, "hist", "what time is it now? [hist]"))
	checkWebHistory(t, g1.base, "before a restart (the channel's memory and the store, not doubled)", pending)
	g1.stop()

	g2 := startGateway(t, vars, approvalConfig)
	checkWebHistory(t, g2.base, "after a restart", pending)
}

// checkWebHistory checks the history of TestE2EWebHistorySurvivesRestart's session.
func checkWebHistory(t *testing.T, base, when, pending string) {
	t.Helper()
	var snap struct {
		Messages []struct {
			Role   string `json:"role"`
			Text   string `json:"text"`
			Tool   string `json:"tool"`
			Result string `json:"result"`
		} `json:"messages"`
		Pending []struct {
			CallID      string `json:"call_id"`
			Tool        string `json:"tool"`
			RequestedBy string `json:"requested_by"`
		} `json:"pending"`
	}
	getJSON(t, base+"/api/chat/history?session=hist", &snap)
	var got []string
	for _, m := range snap.Messages {
		switch m.Role {
		case "approval_prompt": // the chat shows a pending one as a card, a decided one by its tool row
		case "tool":
			got = append(got, "tool "+m.Tool+" → "+oneLine(m.Result, 60))
		default:
			got = append(got, m.Role+" "+oneLine(m.Text, 60))
		}
	}
	want := []string{
		"user hello [hist]",
		"assistant " + echoText + "hello [hist]",
		"user what time is it? [hist]",
		"tool current_time → ",
		"assistant " + afterToolText,
		"user what time is it now? [hist]",
		"tool current_time → ",
	}
	if len(got) != len(want) {
		t.Fatalf("history %s =\n  %s\nwant %d entries like\n  %s", when, strings.Join(got, "\n  "), len(want), strings.Join(want, "\n  "))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("history %s [%d] = %q, want it to start %q", when, i, got[i], want[i])
		}
	}
	if !strings.Contains(got[3], `"time"`) {
		t.Errorf("the approved call's row = %q, want its result (the time)", got[3])
	}
	if len(snap.Pending) != 1 || snap.Pending[0].CallID != pending || snap.Pending[0].Tool != "current_time" || snap.Pending[0].RequestedBy != "u1" {
		t.Errorf("pending %s = %+v, want the current_time call %s asked by u1", when, snap.Pending, pending)
	}
}

// approvalCallID returns the call id of the approval_request event of a turn's events.
func approvalCallID(t *testing.T, evs []sseEvent) string {
	t.Helper()
	for _, e := range evs {
		if e.Event == "approval_request" {
			if id, _ := e.Data["call_id"].(string); id != "" {
				return id
			}
		}
	}
	t.Fatalf("no approval_request event with a call_id in %v", evs)
	return ""
}
