package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate/agent/agenttest"
)

// TestReplicaStopReachesTheOtherReplica: a stop sent to the replica that is not running the
// turn stops it (through the stored stop flags: LISTEN/NOTIFY directly, a poll through PgBouncer).
func TestReplicaStopReachesTheOtherReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two gateway processes")
	}
	for _, path := range databasePaths {
		t.Run(path, func(t *testing.T) { replicaStopReachesTheOtherReplica(t, testDatabase(t, path)) })
	}
}

func replicaStopReachesTheOtherReplica(t *testing.T, db map[string]string) {
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{})
	defer fake.Close()
	hold := make(chan struct{})
	defer close(hold)
	var inCall sync.WaitGroup
	inCall.Add(1)
	var first sync.Once
	fake.Respond(func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
		a := agenttest.Answer{Text: "a long answer that never ends"}
		first.Do(func() {
			a.Hold, a.HoldAfter = hold, 1 // one chunk, then the stream hangs until the turn is stopped
			inCall.Done()
		})
		return a, true
	})
	vars := map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "k"}
	for k, v := range db {
		vars[k] = v
	}
	a := startBinaryGateway(t, withDataDir(t, vars), "")
	b := startBinaryGateway(t, withDataDir(t, vars), "")

	type result struct {
		status, answer string
		err            error
	}
	done := make(chan result, 1)
	go func() {
		st, ans, err := chatStream(a.base, "stopme", "take your time", nil)
		done <- result{st, ans, err}
	}()
	inCall.Wait() // replica A streams the answer
	body, _ := json.Marshal(map[string]string{"session": "stopme", "user": "u-stopme"})
	sent := time.Now()
	resp, err := http.Post(b.base+"/api/chat/stop", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /api/chat/stop on replica B = %d, want 202", resp.StatusCode)
	}
	select {
	case r := <-done:
		took := time.Since(sent)
		t.Logf("the turn on replica A ended %s after the stop was sent to replica B", took.Round(time.Millisecond))
		if r.err != nil || r.status != "stopped" {
			t.Errorf("turn on replica A = %q (%q), %v; want stopped", r.status, r.answer, r.err)
		}
		if took > 3*time.Second { // SPEC: within a second; the margin is for a loaded test machine
			t.Errorf("the stop took %s to reach the turn on the other replica", took)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the turn on replica A was not stopped within 30s of the stop sent to replica B")
	}
}
