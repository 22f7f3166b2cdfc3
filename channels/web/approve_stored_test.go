package web

import (
	"context"
	"strings"
	"testing"

	"github.com/echogate/echogate"
)

// TestApproveAskedByAnotherReplica: a decision for a session or call this process never saw
// (another replica paused the turn) is submitted as the reaction on the prompt the store names,
// or on no message when the pause's prompt reference was never saved (its replica died while
// posting it: any decision on the session's pause counts then); without the hook, or when the
// store has no such call, it is 404 as before.
func TestApproveAskedByAnotherReplica(t *testing.T) {
	stored := echogate.MessageRef{Platform: echogate.PlatformWeb, Channel: "s", ID: "m7"}
	lookup := func(_ context.Context, conv echogate.ConversationRef, callID string) (echogate.MessageRef, bool) {
		switch {
		case conv.SessionKey() == "web:s" && callID == "call-9":
			return stored, true
		case conv.SessionKey() == "web:s" && callID == "call-5":
			return echogate.MessageRef{}, true // paused, but its replica died before the prompt's reference was saved
		}
		return echogate.MessageRef{}, false
	}
	for name, tt := range map[string]struct {
		hook   bool
		body   string
		status int
	}{
		"known to the store":       {true, `{"session":"s","user":"alice","call_id":"call-9","decision":"approve"}`, 202},
		"prompt never saved":       {true, `{"session":"s","user":"alice","call_id":"call-5","decision":"approve"}`, 202},
		"unknown to the store":     {true, `{"session":"s","user":"alice","call_id":"call-8","decision":"approve"}`, 404},
		"without the store":        {false, `{"session":"s","user":"alice","call_id":"call-9","decision":"approve"}`, 404},
		"prompt of another call":   {true, `{"session":"s","user":"alice","call_id":"call-9","prompt_id":"m1","decision":"approve"}`, 400},
		"by prompt id, not stored": {true, `{"session":"s","user":"alice","prompt_id":"m7","decision":"approve"}`, 404},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := Config{}
			if tt.hook {
				cfg.StoredPrompt = lookup
			}
			e := newEnv(t, cfg)
			resp := e.post(t, context.Background(), "/api/chat/approve", tt.body)
			if resp.StatusCode != tt.status {
				t.Fatalf("POST /api/chat/approve %s = %d (%s), want %d", tt.body, resp.StatusCode, readError(t, resp), tt.status)
			}
			resp.Body.Close()
			if tt.status != 202 {
				e.sink.empty(t)
				return
			}
			dec := e.sink.next(t)
			want := stored
			if strings.Contains(tt.body, "call-5") {
				want = echogate.MessageRef{} // a decision on the session's pause, whichever message
			}
			if dec.Kind != echogate.KindReaction || dec.Reaction != echogate.ReactionApprove || dec.Target != want || dec.Actor.ID != "alice" || dec.SessionKey() != "web:s" {
				t.Errorf("decision event = %+v, want ✅ by alice on %+v in web:s", dec, want)
			}
		})
	}
}
