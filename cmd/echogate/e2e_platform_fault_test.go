package main

import (
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

// TestE2EPlatformFaultOnPosting: Slack answers every post with a persistent 500 (or 429): the
// retries stay inside the post budget, the turn is closed as failed (never left running), and
// a restart once Slack is back answers nothing again.
func TestE2EPlatformFaultOnPosting(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	binaryPath(t)
	for name, fault := range map[string]slacktest.Failure{
		"persistent 500": {Status: 500},
		"persistent 429": {Status: 429, RetryAfter: 1},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := slacktest.New(slacktest.Options{PingInterval: 500 * time.Millisecond})
			t.Cleanup(srv.Close)
			fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-fault"})
			t.Cleanup(fake.Close)
			fake.Respond(func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
				return agenttest.TextAnswer("the answer to " + req.LastUser()), true
			})
			vars := map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-fault", "ECHOGATE_DATA_DIR": t.TempDir(),
				"SLACK_BOT_TOKEN": srv.BotToken(), "SLACK_APP_TOKEN": srv.AppToken(), "SLACK_API_URL": srv.APIURL()}
			g := startBinaryGateway(t, vars, "")
			waitReadyz(t, g.base, 200, "slack", func(s string) bool { return s != "" && !strings.HasPrefix(s, "not ready") })

			faults := make([]slacktest.Failure, 500)
			for i := range faults {
				faults[i] = fault
			}
			for _, m := range []string{"chat.postMessage", "chat.update", "chat.startStream", "chat.appendStream", "chat.stopStream"} {
				srv.Fail(m, faults...)
			}
			start := time.Now()
			if _, err := srv.Push(slacktest.DM("D0FAULT", "U0FAULT", "1700000000.000100", "hello"), slacktest.Delivery{}); err != nil {
				t.Fatal(err)
			}
			line := waitLogLine(t, g.logs, 60*time.Second, "turn finished", "session=slack:D0FAULT")
			took := time.Since(start)
			t.Logf("the turn ended %s after the message, with every post failing", took.Round(100*time.Millisecond))
			if !strings.Contains(line, "status=error") {
				t.Errorf("turn end = %s, want status=error", line)
			}
			var turns []echogate.TurnRecord
			getJSON(t, g.base+"/api/turns?session=slack:D0FAULT", &turns)
			if len(turns) != 1 || turns[0].Status != echogate.TurnFailed || !strings.Contains(turns[0].Error, "post answer") {
				t.Fatalf("turns = %+v, want one, failed with the post error", turns)
			}
			if took > 40*time.Second { // the post budget (15 s) + the notice (5 s) + the end's write
				t.Errorf("the failing turn took %s, want it bounded by the stage deadline", took)
			}

			// Slack is back: a restart finds nothing to answer (the event was completed).
			for _, m := range []string{"chat.postMessage", "chat.update", "chat.startStream", "chat.appendStream", "chat.stopStream"} {
				srv.ClearFailures(m)
			}
			g.stop()
			g2 := startBinaryGateway(t, vars, "")
			waitReadyz(t, g2.base, 200, "slack", func(s string) bool { return s != "" && !strings.HasPrefix(s, "not ready") })
			g2.stop()
			if n := len(fake.ChatRequests()); n != 1 {
				t.Errorf("model calls = %d, want 1 (nothing answered again after the restart)", n)
			}
			for _, m := range srv.BotMessages("D0FAULT") {
				if strings.Contains(m.Text, "the answer to") && !m.Deleted {
					t.Errorf("an answer was posted after the fault: %q", m.Text)
				}
			}
		})
	}
}

// waitLogLine waits up to d for a log line with every part.
func waitLogLine(t *testing.T, l *logBuffer, d time.Duration, parts ...string) string {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		ch, text := l.changed, l.b.String()
		l.mu.Unlock()
		for _, line := range strings.Split(text, "\n") {
			if containsAll(line, parts...) {
				return line
			}
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("no log line with %q within %s", parts, d)
			return ""
		}
	}
}
