package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/echogate/echogate/agent/provider/demo"
)

// TestE2EDemoModeShowsAnApproval: with no model configured (demo mode), the README's phrase
// "remind me every day to …" makes the demo model ask the schedule tool for a daily job, which
// needs approval: the web chat gets an approval request naming the tool, and a denial is
// answered naming who denied it.
func TestE2EDemoModeShowsAnApproval(t *testing.T) {
	g := startGateway(t, map[string]string{}, "")
	var info map[string]any
	getJSON(t, g.base+"/api/info", &info)
	if info["model"] != "demo (offline)" || info["demo"] != true {
		t.Errorf("GET /api/info = %v, want the demo model named (the console's header shows it)", info)
	}
	evs := postChat(t, g.base, "demo-approval", demo.ApprovalPhrase+" check the deploys")
	var req sseEvent
	for _, e := range evs {
		if e.Event == "approval_request" {
			req = e
		}
	}
	if req.Data["tool"] != "schedule" || !strings.Contains(req.Data["args"].(string), "0 9 * * *") {
		t.Fatalf("events = %v, want an approval request for the schedule tool's daily job", evs)
	}
	body, _ := json.Marshal(map[string]string{"session": "demo-approval", "user": "u1", "call_id": req.Data["call_id"].(string), "decision": "deny"})
	resp, err := http.Post(g.base+"/api/chat/approve", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /api/chat/approve = %d, want 202", resp.StatusCode)
	}
	// Follow the resumed turn after the events already read.
	sreq, _ := http.NewRequest(http.MethodGet, g.base+"/api/chat/stream?session=demo-approval", nil)
	sreq.Header.Set("Last-Event-ID", evs[len(evs)-1].ID)
	stream, err := http.DefaultClient.Do(sreq)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	var answer string
	for _, e := range readSSE(t, stream.Body) {
		if e.Event == "done" {
			answer, _ = e.Data["text"].(string)
		}
	}
	if !strings.Contains(answer, "I did not run the schedule tool: u1 denied it.") {
		t.Errorf("answer after the denial = %q, want it to say u1 denied it", answer)
	}
}
