package web

import (
	"context"
	"testing"

	"github.com/echogate/echogate"
)

// TestApproveAskedByAnotherReplica: a decision for a session or call this process never saw
// (another replica paused the turn) is submitted as the reaction on the prompt the store names;
// without the hook, or when the store has no such call, it is 404 as before.
func TestApproveAskedByAnotherReplica(t *testing.T) {
	stored := echogate.MessageRef{Platform: echogate.PlatformWeb, Channel: "s", ID: "m7"}
	lookup := func(_ context.Context, conv echogate.ConversationRef, callID string) (echogate.MessageRef, bool) {
		if conv.SessionKey() == "web:s" && callID == "call-9" {
			return stored, true
		}
		return echogate.MessageRef{}, false
	}
	for name, tt := range map[string]struct {
		hook   bool
		body   string
		status int
	}{
		"known to the store":       {true, `{"session":"s","user":"alice","call_id":"call-9","decision":"approve"}`, 202},
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
			if dec.Kind != echogate.KindReaction || dec.Reaction != echogate.ReactionApprove || dec.Target != stored || dec.Actor.ID != "alice" || dec.SessionKey() != "web:s" {
				t.Errorf("decision event = %+v, want ✅ by alice on %+v in web:s", dec, stored)
			}
		})
	}
}
