package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

var (
	chaosSessions = flag.Int("chaos.sessions", 10, "TestChaos: concurrent Slack sessions")
	chaosMessages = flag.Int("chaos.messages", 6, "TestChaos: messages per session (every third one runs an approved tool)")
	chaosKills    = flag.Int("chaos.kills", 6, "TestChaos: SIGKILLs at least (targeted ones plus random ones)")
)

var chaosTag = regexp.MustCompile(`\[c\d+-m\d+\]`)

// chaosRun drives the real binary over the Slack Socket Mode fake while killing it.
type chaosRun struct {
	t         *testing.T
	srv       *slacktest.Server
	vars      map[string]string
	cfg       string
	countFile string // one line per run of the approved tool: the message's tag

	g     *e2eGateway // touched by the test goroutine only
	kills int
	kill  chan string // kill requests (reasons), served by the test goroutine

	resumedKills atomic.Int32 // kills asked for during a resumed model call
	approvalKill atomic.Int32 // kills asked for 0–20 ms after a ✅
	approvals    atomic.Int32 // ✅ acknowledged
	redelivered  atomic.Int32 // deliveries that needed more than one push
	answered     atomic.Int32 // messages whose answer arrived
}

// requestKill asks the test goroutine for a SIGKILL; false when a kill already asked for
// absorbs it.
func (c *chaosRun) requestKill(reason string) bool {
	select {
	case c.kill <- reason:
		return true
	default:
		return false
	}
}

// deliver pushes an event until the gateway acknowledges it, with Slack's redelivery: the same
// event id and an increasing retry_attempt. A push that found no live connection waits for
// the gateway to connect again. It returns the last attempt's error when it gave up.
func (c *chaosRun) deliver(inner map[string]any) error {
	evID := fmt.Sprintf("Ev%016x", rand.Uint64())
	var err error
	for attempt := 0; attempt < 200; attempt++ {
		if attempt > 0 {
			c.redelivered.Add(1)
		}
		var env string
		env, err = c.srv.Push(inner, slacktest.Delivery{EventID: evID, RetryAttempt: attempt})
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		if err == nil {
			err = c.srv.WaitFor(ctx, func() bool { return c.srv.Acks(env) > 0 })
		} else if werr := c.srv.WaitFor(ctx, func() bool { return c.srv.OpenConnections() > 0 }); werr != nil {
			err = fmt.Errorf("%w; no connection since: %w", err, werr)
		}
		cancel()
		if err == nil {
			return nil
		}
	}
	return fmt.Errorf("200 deliveries, the last: %w", err)
}

// answers are the complete answers carrying tag: the final message of a turn's answer names
// its turn in its metadata (a stream cut short by a kill does not).
func (c *chaosRun) answers(ch, tag string) []slacktest.Message {
	var out []slacktest.Message
	for _, m := range c.srv.BotMessages(ch) {
		if !m.Deleted && strings.Contains(m.Text, "answer "+tag) && strings.Contains(string(m.Metadata), `"turn"`) {
			out = append(out, m)
		}
	}
	return out
}

// partials are the answers of tag a kill cut short (never completed, not counted as answers).
func (c *chaosRun) partials(ch, tag string) int {
	n := 0
	for _, m := range c.srv.BotMessages(ch) {
		if !m.Deleted && strings.Contains(m.Text, "answer "+tag) && !strings.Contains(string(m.Metadata), `"turn"`) {
			n++
		}
	}
	return n
}

// prompts are the approval prompts naming tag.
func (c *chaosRun) prompts(ch, tag string) []slacktest.Message {
	var out []slacktest.Message
	for _, m := range c.srv.BotMessages(ch) {
		if strings.Contains(m.Text, "Approval needed") && strings.Contains(m.Text, tag) {
			out = append(out, m)
		}
	}
	return out
}

// session runs one DM conversation: each message waits for its answer before the next is
// sent; a tool message is approved (✅) on every prompt it gets.
func (c *chaosRun) session(i int, burst *sync.WaitGroup, errs chan<- error) {
	ch, user := fmt.Sprintf("D%07d", 100+i), fmt.Sprintf("U%07d", 100+i)
	for k := 0; k < *chaosMessages; k++ {
		tag := fmt.Sprintf("[c%d-m%d]", i, k)
		tool := k%3 == 1
		text := "chaos " + tag
		if tool {
			text = "run it " + tag
		}
		ts := fmt.Sprintf("%d.%06d", 1700000000+i*1000+k, 100)
		err := c.deliver(slacktest.DM(ch, user, ts, text))
		if k == 0 {
			burst.Done()
		}
		if err != nil {
			errs <- fmt.Errorf("%s: never acknowledged: %w", tag, err)
			return
		}
		if err := c.await(ch, user, tag, tool); err != nil {
			errs <- err
			return
		}
		c.answered.Add(1)
	}
}

// await waits for tag's answer, approving each new prompt of a tool message on the way.
func (c *chaosRun) await(ch, user, tag string, tool bool) error {
	approved := map[string]bool{}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		var todo string
		err := c.srv.WaitFor(ctx, func() bool {
			if len(c.answers(ch, tag)) > 0 {
				return true
			}
			for _, p := range c.prompts(ch, tag) {
				// A user may react before the bot's own reactions are on (or after a kill left
				// them half added): the prompt's message is what counts.
				if tool && !approved[p.TS] {
					todo = p.TS
					return true
				}
			}
			return false
		})
		cancel()
		if err != nil {
			break
		}
		if todo == "" {
			return nil
		}
		approved[todo] = true
		if err := c.deliver(slacktest.Reaction(user, "white_check_mark", ch, todo, c.srv.BotUserID())); err != nil {
			return fmt.Errorf("%s: ✅ never acknowledged: %w", tag, err)
		}
		c.approvals.Add(1)
		if c.approvalKill.Load() < 2 {
			// Targeted: 0–20 ms after an acknowledged ✅ (a timed kill, not a wait).
			after := time.Duration(rand.IntN(21)) * time.Millisecond
			time.Sleep(after)
			if c.requestKill(fmt.Sprintf("%s after the acknowledged ✅ of %s", after, tag)) {
				c.approvalKill.Add(1)
			}
		}
	}
	return fmt.Errorf("%s: no answer within 90s; bot messages: %q", tag, c.botTexts(ch))
}

func (c *chaosRun) botTexts(ch string) []string {
	var out []string
	for _, m := range c.srv.BotMessages(ch) {
		out = append(out, oneLine(m.Text, 80))
	}
	return out
}

// restart kills the gateway with SIGKILL and starts it again on the same data dir.
func (c *chaosRun) restart(reason string) {
	c.t.Helper()
	c.g.kill()
	c.kills++
	c.t.Logf("SIGKILL %d: %s", c.kills, reason)
	c.g = startBinaryGateway(c.t, c.vars, c.cfg)
	c.connected()
}

// connected waits until the gateway's Slack channel is connected (readyz).
func (c *chaosRun) connected() {
	c.t.Helper()
	waitReadyz(c.t, c.g.base, 200, "slack", func(s string) bool { return s != "" && !strings.HasPrefix(s, "not ready") })
}

// TestChaos: ≥ 60 messages over ≥ 10 Slack sessions, a third of them running a tool after a
// ✅, while the binary is killed with SIGKILL at random and targeted moments (right after a
// burst of acknowledged events, 0–20 ms after a ✅, during the resumed model call). Nothing
// acknowledged is lost, nothing is answered twice, every approved tool runs exactly once, and
// no turn is left running or paused. `make chaos` runs a longer form.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("runs and kills the binary")
	}
	srv := slacktest.New(slacktest.Options{PingInterval: 500 * time.Millisecond})
	t.Cleanup(srv.Close)
	srv.SetNativeStreaming(true)
	dir := t.TempDir()
	script := filepath.Join(dir, "record-run")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s\\n' \"$2\" >> \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := &chaosRun{t: t, srv: srv, countFile: filepath.Join(dir, "runs.log"), kill: make(chan string, 1)}
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-chaos"})
	t.Cleanup(fake.Close)
	fake.Respond(c.model(script))
	c.vars = map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-chaos", "ECHOGATE_DATA_DIR": filepath.Join(dir, "data"),
		"SLACK_BOT_TOKEN": srv.BotToken(), "SLACK_APP_TOKEN": srv.AppToken(), "SLACK_API_URL": srv.APIURL(), "ECHOGATE_LOG_LEVEL": "info"}
	// run_command is destructive: its calls need an approver, so each session's user is one.
	approvers := make([]string, *chaosSessions)
	for i := range approvers {
		approvers[i] = fmt.Sprintf("slack:U%07d", 100+i)
	}
	// The count file is outside the data dir's workspace: allow_paths lets the command name it.
	c.cfg = writeConfig(t, fmt.Sprintf("agent: {drain_timeout: 2s}\napproval: {approvers: [%s]}\ntools:\n  run_command: {approval: ask, allowed: [%q], timeout: 10s, allow_paths: [%q]}\n",
		strings.Join(approvers, ", "), script, filepath.Dir(c.countFile)))
	c.g = startBinaryGateway(t, c.vars, c.cfg)
	c.connected()

	var burst, drivers sync.WaitGroup
	errs := make(chan error, *chaosSessions)
	burst.Add(*chaosSessions)
	for i := range *chaosSessions {
		drivers.Go(func() { c.session(i, &burst, errs) })
	}
	allDone := make(chan struct{})
	go func() { drivers.Wait(); close(allDone) }()
	burstAcked := make(chan struct{})
	go func() { burst.Wait(); close(burstAcked) }()

	random := time.NewTimer(time.Duration(1500+rand.IntN(1500)) * time.Millisecond)
	defer random.Stop()
	// The random kills are paced by time, so a faster gateway finished the run with fewer than
	// -chaos.kills of them (22 of 25 once). pace adds one whenever the answers get ahead of the
	// kills: the k-th kill comes by the time k/(kills+2) of the messages are answered, so the
	// last is due with traffic still running, whatever the turns' speed.
	total := *chaosSessions * *chaosMessages
	pace := time.NewTicker(50 * time.Millisecond)
	defer pace.Stop()
	for running := true; running; {
		select {
		case <-pace.C:
			if due := (c.kills + 1) * total / (*chaosKills + 2); c.kills < *chaosKills && int(c.answered.Load()) >= due {
				c.restart(fmt.Sprintf("with %d of %d messages answered (pacing the kills over the run)", c.answered.Load(), total))
			}
		case <-burstAcked:
			burstAcked = nil
			c.restart("right after a burst of acknowledged first messages")
		case reason := <-c.kill:
			c.restart(reason)
		case <-random.C:
			c.restart("at a random moment")
			random.Reset(time.Duration(400+rand.IntN(1200)) * time.Millisecond)
		case <-allDone:
			running = false
		}
		if c.kills >= *chaosKills && random != nil {
			random.Stop()
		}
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// A graceful restart at the end: whatever the last kill left unfinished is finished (and
	// must not be answered twice).
	c.g.stop()
	c.g = startBinaryGateway(t, c.vars, c.cfg)
	c.connected()
	c.check()
}

// model answers plain messages with their tag and tool messages with run_command (record-run
// appends the tag to the count file); the call after a tool result is the resumed one, and
// the first ones of those are killed while they stream.
func (c *chaosRun) model(script string) func(agenttest.ChatRequest) (agenttest.Answer, bool) {
	return func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
		tag := chaosTag.FindString(req.LastUser())
		slow := agenttest.Answer{FragmentSize: 6, ChunkDelay: 3 * time.Millisecond}
		if req.Last().Role == "tool" {
			if c.resumedKills.Load() < 2 && c.requestKill("during the resumed model call of "+tag) {
				c.resumedKills.Add(1)
				slow.ChunkDelay = 40 * time.Millisecond
			}
			slow.Text = "answer " + tag + " after the tool: " + oneLine(req.Last().Content, 60) + " (end)"
			return slow, true
		}
		if strings.Contains(req.LastUser(), "run it") {
			args, _ := json.Marshal(map[string]any{"command": script, "args": []string{c.countFile, tag}})
			return agenttest.ToolAnswer(echogate.ToolCall{Name: "run_command", Arguments: string(args)}), true
		}
		slow.Text = "answer " + tag + " is here (end)"
		return slow, true
	}
}

// check: every message answered exactly once, every approved tool run exactly once, no turn
// left running or paused, no approval left pending.
func (c *chaosRun) check() {
	t := c.t
	runs := map[string]int{}
	if b, err := os.ReadFile(c.countFile); err == nil {
		for _, line := range strings.Fields(string(b)) {
			runs[line]++
		}
	}
	lost, twice, toolWrong, toolTurns, notRerun, partial := 0, 0, 0, 0, 0, 0
	for i := range *chaosSessions {
		ch := fmt.Sprintf("D%07d", 100+i)
		for k := 0; k < *chaosMessages; k++ {
			tag := fmt.Sprintf("[c%d-m%d]", i, k)
			switch n := len(c.answers(ch, tag)); {
			case n == 0:
				lost++
				t.Errorf("%s: not answered", tag)
			case n > 1:
				twice++
				t.Errorf("%s: answered %d times: %q", tag, n, c.botTexts(ch))
			}
			partial += c.partials(ch, tag)
			if k%3 == 1 {
				toolTurns++
				switch runs[tag] {
				case 1:
				case 0:
					// Killed between the durable start of the call and its end: not run again
					// (at most once), and the answer says so.
					notRerun++
					if a := c.answers(ch, tag); len(a) == 1 && !strings.Contains(a[0].Text, "started before the gateway restarted") {
						t.Errorf("%s: the approved tool never ran and the answer does not say so: %q", tag, a[0].Text)
					}
				default:
					toolWrong++
					t.Errorf("%s: the approved tool ran %d times, want at most once", tag, runs[tag])
				}
			}
		}
	}
	var turns []echogate.TurnRecord
	getJSON(t, c.g.base+"/api/turns?limit=10000", &turns)
	stuck := 0
	for _, tr := range turns {
		if tr.Status == echogate.TurnRunning || tr.Status == echogate.TurnPaused {
			stuck++
			t.Errorf("turn %s of %s left %s", tr.ID, tr.Session, tr.Status)
		}
	}
	if pend := pendingApprovals(t, c.g.base); len(pend) != 0 {
		t.Errorf("approvals left pending: %v", pend)
	}
	msgs := *chaosSessions * *chaosMessages
	t.Logf("chaos: %d messages in %d sessions (%d tool turns, %d approvals), %d SIGKILLs, %d redeliveries, %d turns recorded: "+
		"%d lost, %d answered twice, %d approved tools run more than once, %d interrupted mid-call and not run again, "+
		"%d turns left running/paused, %d answers cut short by a kill and left partial before the full answer",
		msgs, *chaosSessions, toolTurns, c.approvals.Load(), c.kills, c.redelivered.Load(), len(turns), lost, twice, toolWrong, notRerun, stuck, partial)
	if c.kills < *chaosKills {
		t.Errorf("%d SIGKILLs, want at least %d", c.kills, *chaosKills)
	}
	if c.approvalKill.Load() < 1 || c.resumedKills.Load() < 1 {
		t.Errorf("targeted kills: %d after a ✅, %d during a resumed model call; want at least one of each", c.approvalKill.Load(), c.resumedKills.Load())
	}
}
