package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

// pendingView is what a run reads of GET /api/approvals.
type pendingView struct {
	Session string              `json:"session"`
	CallID  string              `json:"call_id"`
	Args    string              `json:"args"`
	Prompt  echogate.MessageRef `json:"prompt"`
}

// approvePending approves, once each, the pending approvals of tag's tool call, through a
// replica other than the one that paused (Discord reactions reach every replica on the shard).
func (s *rsession) approvePending(tag string, decided map[string]bool) {
	var pend []pendingView
	if s.r.fetch("/api/approvals?limit=1000", &pend) != nil {
		return
	}
	for _, p := range pend {
		if decided[p.CallID] || !strings.Contains(p.Args, tag) || (s.kind != "web" && p.Prompt.ID == "") {
			continue
		}
		s.r.mu.Lock()
		paused, ok := s.r.pausedBy[tag]
		s.r.mu.Unlock()
		if !ok {
			paused = -1
		}
		others := s.r.rs.readyOthers(paused)
		if len(others) == 0 {
			return
		}
		other := others[rand.IntN(len(others))]
		if s.decide(p, other, paused) {
			decided[p.CallID] = true
			s.r.approvals.Add(1)
			if other != paused && paused >= 0 {
				s.r.crossApprovals.Add(1)
			}
		}
	}
}

// decide sends ✅ for p through replica other; it reports whether a replica took it.
func (s *rsession) decide(p pendingView, other, paused int) bool {
	// Each attempt goes to a ready replica other than the paused one, as through the load
	// balancer (the one first chosen may be killed or draining meanwhile).
	base := func() string {
		if others := s.r.rs.readyOthers(paused); len(others) > 0 {
			return s.r.rs.base(others[rand.IntN(len(others))])
		}
		return ""
	}
	switch s.kind {
	case "socket", "events":
		inner := slacktest.Reaction(s.user, "white_check_mark", s.ch, p.Prompt.ID, s.r.slack.BotUserID())
		return s.r.postEvent(base, fmt.Sprintf("Ev%016x", rand.Uint64()), inner) == nil
	case "discord":
		return s.r.discord.AddReaction(p.Prompt.ID, s.duser, "✅") == nil
	}
	body, _ := json.Marshal(map[string]string{"session": s.webSession(), "user": s.user, "call_id": p.CallID, "decision": "approve"})
	b := s.r.rs.base(other)
	if b == "" {
		return false
	}
	resp, err := http.Post(b+"/api/chat/approve", "application/json", bytes.NewReader(body))
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound && other != paused {
		s.r.refused.Add(1)
		s.r.t.Logf("web %s: replica %d refused the approval of call %s (paused on replica %d): %s", s.webSession(), other, p.CallID, paused, resp.Status)
	}
	return resp.StatusCode == http.StatusAccepted
}

// settle waits, bounded, until no turn runs or waits and no approval is pending (the last
// kill's takeovers finish after agent.replay_after), and returns what is left.
func (r *rchaos) settle() (turns []echogate.TurnRecord, stuck int, pend []pendingView) {
	deadline := time.Now().Add(3*rchaosReplayAfter + 20*time.Second)
	for {
		turns, pend, stuck = nil, nil, 0
		_ = r.fetch("/api/turns?limit=10000", &turns)
		_ = r.fetch("/api/approvals?limit=1000", &pend)
		for _, tr := range turns {
			if tr.Status == echogate.TurnRunning || tr.Status == echogate.TurnPaused {
				stuck++
			}
		}
		if (stuck == 0 && len(pend) == 0) || time.Now().After(deadline) {
			return turns, stuck, pend
		}
		time.Sleep(200 * time.Millisecond) // polling the replicas' HTTP API: nothing to wait on
	}
}

// check counts, over every message of the run: lost, answered twice, approved tools run more
// than once, turns left running or paused, approvals lost; and reports the takeover times.
func (r *rchaos) check(name string, kills int) {
	t := r.t
	turns, stuck, pend := r.settle()
	runs := map[string]int{}
	if b, err := os.ReadFile(r.countFile); err == nil {
		for _, line := range strings.Fields(string(b)) {
			runs[line]++
		}
	}
	lost, twice, toolTwice, notRun, toolTurns := 0, 0, 0, 0, 0
	for i := range *rchaosSessions {
		s := r.session(i)
		if s.kind == "discord" {
			s.ch = r.discord.DMChannel(s.user)
		}
		for k := 0; k < *rchaosMessages; k++ {
			tag := fmt.Sprintf("[r%d-m%d]", i, k)
			switch n := s.answers(tag); {
			case n == 0:
				lost++
				t.Errorf("%s %s: not answered", s.kind, tag)
			case n > 1:
				twice++
				t.Errorf("%s %s: answered %d times", s.kind, tag, n)
			}
			if k%3 != 1 {
				continue
			}
			toolTurns++
			switch runs[tag] {
			case 1:
			case 0:
				notRun++ // killed between the durable start of the call and its end: at most once
			default:
				toolTwice++
				t.Errorf("%s %s: the approved tool ran %d times, want at most once", s.kind, tag, runs[tag])
			}
		}
	}
	for _, tr := range turns {
		if tr.Status == echogate.TurnRunning || tr.Status == echogate.TurnPaused {
			t.Errorf("turn %s of %s left %s", tr.ID, tr.Session, tr.Status)
		}
	}
	for _, p := range pend {
		t.Errorf("approval left pending: %s call %s (%s)", p.Session, p.CallID, p.Args)
	}
	if n := r.refused.Load(); n > 0 {
		t.Errorf("%d approvals refused by a replica other than the one that paused", n)
	}
	r.mu.Lock()
	var hanging []string
	for id, resp := range r.open {
		hanging = append(hanging, id)
		resp.Body.Close() // ends its reader
	}
	if len(hanging) > 0 {
		// A known defect, reported: the replica that accepted a web message streams only the
		// turns its own pipeline runs; when another replica took the turn over, the stream
		// ends at web.stream_timeout (10 min), after the answer is in the transcript.
		t.Logf("%s: %d web chat streams still open after their answer (the turn ran on another replica): %v", name, len(hanging), hanging)
	}
	if len(r.resentWhy) > 0 {
		t.Logf("%s: sends repeated, by cause: %v", name, r.resentWhy)
	}
	takeovers := append([]time.Duration(nil), r.takeovers...)
	waitingTakeover := len(r.takeover)
	r.mu.Unlock()
	r.streams.Wait()
	t.Logf("%s: %d messages in %d sessions on 3 replicas (%d tool turns; %d approvals, %d through another replica than the paused one), %d kills, "+
		"%d sends repeated, %d Socket Mode redeliveries, %d turns recorded: %d lost, %d answered twice, %d approved tools run more than once, "+
		"%d approved tools interrupted mid-run and not run again, %d turns left running/paused, %d approvals lost (%d pending, %d refused)",
		name, *rchaosSessions**rchaosMessages, *rchaosSessions, toolTurns, r.approvals.Load(), r.crossApprovals.Load(), kills,
		r.resent.Load(), r.slack.Redeliveries(), len(turns), lost, twice, toolTwice, notRun, stuck, len(pend)+int(r.refused.Load()), len(pend), r.refused.Load())
	if len(takeovers) > 0 {
		t.Logf("%s: takeover of a killed replica's conversations (agent.replay_after %s): %d measured, min %s, median %s, p95 %s, max %s (%d in flight at a kill never called the model again)",
			name, rchaosReplayAfter, len(takeovers), percentile(takeovers, 0).Round(time.Millisecond), percentile(takeovers, 50).Round(time.Millisecond),
			percentile(takeovers, 95).Round(time.Millisecond), percentile(takeovers, 100).Round(time.Millisecond), waitingTakeover)
	}
}
