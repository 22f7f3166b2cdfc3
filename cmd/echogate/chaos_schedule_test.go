package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/channels/slack/slacktest"
	"github.com/echogate/echogate/internal/schedule"
	"github.com/echogate/echogate/pipeline"
)

var (
	schedChaosSlots = flag.Int("schedchaos.slots", 24, "TestScheduleChaos: slots run (answers delivered) at least, over all jobs")
	schedChaosKills = flag.Int("schedchaos.kills", 3, "TestScheduleChaos: SIGKILLs at least")
)

// schedChaosJobs: every 2s (scheduler.min_interval lowered to 1s), both catch-up policies.
var schedChaosJobs = []struct{ name, catchUp, ch string }{
	{"tick-a", "once", "C0SCHAOS1"}, {"tick-b", "skip", "C0SCHAOS2"}, {"tick-c", "once", "C0SCHAOS3"}, {"tick-d", "skip", "C0SCHAOS4"},
}

var turnMeta = regexp.MustCompile(`"turn":"([^"]+)"`)

// schedChaos runs the binary (one replica on SQLite, two on PostgreSQL when DATABASE_URL is
// set) with jobs every 2s, killing replicas with SIGKILL at random instants.
type schedChaos struct {
	t        *testing.T
	srv      *slacktest.Server
	vars     map[string]string
	cfg      string
	gs       []*e2eGateway
	kills    int
	kill     chan string
	modelHit atomic.Int32
	down     [][2]time.Time // instants from a kill until no replica was left down
	outages  [][2]time.Time // every replica down for longer than a period: slots missed
}

// outage kills every replica, waits longer than the jobs' period (their slots are missed),
// and starts them again: catch-up must run the latest missed slot of each job.
func (c *schedChaos) outage() {
	c.t.Helper()
	from := time.Now()
	for _, g := range c.gs {
		g.kill()
		c.kills++
	}
	pause := time.Duration(3000+rand.IntN(3000)) * time.Millisecond
	c.t.Logf("SIGKILL of every replica (%d kills so far), down for %s", c.kills, pause)
	time.Sleep(pause)
	for i := range c.gs {
		c.gs[i] = startBinaryGateway(c.t, c.vars, c.cfg)
		waitReadyz(c.t, c.gs[i].base, 200, "slack", func(s string) bool { return s != "" && !strings.HasPrefix(s, "not ready") })
	}
	c.down = append(c.down, [2]time.Time{from, time.Now()})
	c.outages = append(c.outages, [2]time.Time{from, time.Now()})
}

func (c *schedChaos) restart(i int, reason string) {
	c.t.Helper()
	from := time.Now()
	c.gs[i].kill()
	c.kills++
	c.t.Logf("SIGKILL %d (replica %d): %s", c.kills, i, reason)
	c.gs[i] = startBinaryGateway(c.t, c.vars, c.cfg)
	waitReadyz(c.t, c.gs[i].base, 200, "slack", func(s string) bool { return s != "" && !strings.HasPrefix(s, "not ready") })
	c.down = append(c.down, [2]time.Time{from, time.Now()})
}

// answers maps each turn to its complete answers (the final message names its turn).
func (c *schedChaos) answers() map[string]int {
	out := map[string]int{}
	for _, j := range schedChaosJobs {
		for _, m := range c.srv.BotMessages(j.ch) {
			if mm := turnMeta.FindSubmatch(m.Metadata); !m.Deleted && mm != nil && strings.Contains(m.Text, "slot answer") {
				out[string(mm[1])]++
			}
		}
	}
	return out
}

func (c *schedChaos) delivered() int {
	n := 0
	for _, k := range c.answers() {
		n += k
	}
	return n
}

// TestScheduleChaos: jobs every 2s run while the gateway is killed with SIGKILL at random
// instants (at a random moment, right at a slot's claim, during a run's model call), on two
// replicas sharing PostgreSQL when DATABASE_URL is set. At the end: no slot claimed twice, no
// slot run by two turns, no answer posted twice, every claimed slot delivered, and every slot
// not run was passed over the way catch-up says (missed while it was due, the latest of the
// missed ones run). `make chaos-schedules` runs the long form (≥ 200 slots).
func TestScheduleChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("runs and kills the binary")
	}
	srv := slacktest.New(slacktest.Options{PingInterval: 500 * time.Millisecond})
	t.Cleanup(srv.Close)
	c := &schedChaos{t: t, srv: srv, kill: make(chan string, 1)}
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-chaos"})
	t.Cleanup(fake.Close)
	fake.Respond(func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
		a := agenttest.Answer{Text: "slot answer to " + oneLine(req.LastUser(), 40) + " (end)", FragmentSize: 8, ChunkDelay: 2 * time.Millisecond}
		if c.modelHit.Add(1)%11 == 0 {
			select {
			case c.kill <- "during a run's model call":
				a.ChunkDelay = 30 * time.Millisecond
			default:
			}
		}
		return a, true
	})
	dir := t.TempDir()
	c.vars = map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-chaos", "ECHOGATE_DATA_DIR": filepath.Join(dir, "data"),
		"SLACK_BOT_TOKEN": srv.BotToken(), "SLACK_APP_TOKEN": srv.AppToken(), "SLACK_API_URL": srv.APIURL(), "ECHOGATE_LOG_LEVEL": "info"}
	replicas := 1
	if os.Getenv("ECHOGATE_TEST_DATABASE_URL")+os.Getenv("DATABASE_URL") != "" {
		c.vars["DATABASE_URL"] = testPostgres(t)
		replicas = 2
	}
	var yaml strings.Builder
	yaml.WriteString("agent: {drain_timeout: 2s, replay_after: 3s}\napproval: {check_interval: 250ms}\nscheduler: {min_interval: 1s, stale_after: 3s}\nschedules:\n")
	for _, j := range schedChaosJobs {
		fmt.Fprintf(&yaml, "  - {name: %s, every: 2s, catch_up: %s, prompt: %q, deliver: 'slack:%s'}\n", j.name, j.catchUp, "tick of "+j.name, j.ch)
	}
	c.cfg = writeConfig(t, yaml.String())
	start := time.Now()
	for range replicas {
		g := startBinaryGateway(t, c.vars, c.cfg)
		waitReadyz(t, g.base, 200, "slack", func(s string) bool { return s != "" && !strings.HasPrefix(s, "not ready") })
		c.gs = append(c.gs, g)
	}
	random := time.NewTimer(time.Duration(800+rand.IntN(2000)) * time.Millisecond)
	defer random.Stop()
	atSlot := time.NewTimer(time.Duration(1500+rand.IntN(3000)) * time.Millisecond)
	defer atSlot.Stop()
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	deadline := time.Now().Add(time.Duration(*schedChaosSlots)*time.Second + time.Minute)
	for c.delivered() < *schedChaosSlots || c.kills < *schedChaosKills || len(c.outages) == 0 {
		if time.Now().After(deadline) {
			var seen []string
			for _, m := range c.srv.BotMessages(schedChaosJobs[0].ch) {
				seen = append(seen, oneLine(m.Text, 60)+" "+string(m.Metadata))
			}
			t.Fatalf("%d answers and %d kills by the deadline, want %d and %d; %s got %q", c.delivered(), c.kills, *schedChaosSlots, *schedChaosKills, schedChaosJobs[0].ch, seen)
		}
		select {
		case <-poll.C:
		case reason := <-c.kill:
			c.restart(rand.IntN(replicas), reason)
		case <-random.C:
			if rand.IntN(4) == 0 || len(c.outages) == 0 && c.delivered() > *schedChaosSlots/3 {
				c.outage()
			} else {
				c.restart(rand.IntN(replicas), "at a random moment")
			}
			random.Reset(time.Duration(800+rand.IntN(2500)) * time.Millisecond)
		case <-atSlot.C:
			// Slots of every: 2s fall on even seconds of the jobs' anchor: a kill 0–40 ms after
			// one lands while it is claimed or just submitted.
			var list []struct {
				Next time.Time `json:"next_run"`
			}
			getJSON(t, c.gs[0].base+"/api/schedules", &list)
			if len(list) > 0 && !list[0].Next.IsZero() {
				time.Sleep(time.Until(list[0].Next) + time.Duration(rand.IntN(41))*time.Millisecond)
				c.restart(rand.IntN(replicas), "right at a slot's claim")
			}
			atSlot.Reset(time.Duration(2000+rand.IntN(4000)) * time.Millisecond)
		}
	}
	end := time.Now()
	// The last kill's unsubmitted claims are taken over after stale_after; a graceful stop of
	// every replica but the first, then the check on what the store and Slack hold.
	for i := 1; i < len(c.gs); i++ {
		c.gs[i].stop()
	}
	c.check(start, end)
}

// check reads the runs from the store and the answers from the fake Slack.
func (c *schedChaos) check(start, end time.Time) {
	t := c.t
	ctx := context.Background()
	cfg, err := loadConfig("", func(k string) string { return c.vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := openStore(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runsOf := c.finishedRuns(ctx, st.(schedule.Store), end)
	n := c.checkSlots(runsOf, end)
	caughtUp := c.checkCatchUps(runsOf)
	t.Logf("schedule chaos: %d outages of every replica (longer than a period): %d of %d job catch-ups ran", len(c.outages), caughtUp, len(c.outages)*len(schedChaosJobs))
	t.Logf("schedule chaos: %d replicas, %d jobs every 2s over %s, %d SIGKILLs: %d slots run (claimed; %d of them interrupted by a kill and replayed), %d claimed twice, %d run by two turns, "+
		"%d answers posted twice, %d not delivered once, %d posted once but recorded unconfirmed; %d slots passed over by catch-up (%d while a replica was down, %d while up: a late pass), %d passed over before due",
		len(c.gs), len(schedChaosJobs), end.Sub(start).Round(time.Second), c.kills, n.slots, n.replays, n.claimedTwice, n.runTwice, n.postedTwice, n.notDelivered, n.unconfirmed,
		n.skipped, n.skippedDown, n.skipped-n.skippedDown, n.wrongSkip)
	if n.slots < *schedChaosSlots {
		t.Errorf("%d slots run, want at least %d", n.slots, *schedChaosSlots)
	}
}

// finishedRuns waits until every claimed slot up to end has an outcome (recovery included) and
// returns each job's runs.
func (c *schedChaos) finishedRuns(ctx context.Context, sst schedule.Store, end time.Time) map[string][]schedule.Run {
	t := c.t
	runsOf := map[string][]schedule.Run{}
	for wait := time.Now().Add(waitTimeout + 10*time.Second); ; time.Sleep(200 * time.Millisecond) {
		open := 0
		for _, j := range schedChaosJobs {
			rs, err := sst.ListRuns(ctx, schedule.ConfigID(j.name), 100000)
			if err != nil {
				t.Fatal(err)
			}
			runsOf[j.name] = rs
			for _, r := range rs {
				if r.Outcome == "" && r.Slot.Before(end) {
					open++
				}
			}
		}
		if open == 0 {
			return runsOf
		}
		if time.Now().After(wait) {
			t.Fatalf("%d claimed slots never finished", open)
		}
	}
}

// slotTurns maps each slot's event key to the turns that ran it and those a kill interrupted
// (closed by recovery, their event answered by a new turn: pipeline.Replayed, a replay rather
// than a second run).
func (c *schedChaos) slotTurns() (ran, replayed map[string][]string) {
	var turns []echogate.TurnRecord
	getJSON(c.t, c.gs[0].base+"/api/turns?limit=10000", &turns)
	ran, replayed = map[string][]string{}, map[string][]string{}
	for _, tr := range turns {
		if i := strings.Index(tr.EventKey, "schedule:"); i >= 0 {
			if pipeline.Replayed(tr) {
				replayed[tr.EventKey[i:]] = append(replayed[tr.EventKey[i:]], tr.ID)
				continue
			}
			ran[tr.EventKey[i:]] = append(ran[tr.EventKey[i:]], tr.ID)
		}
	}
	return ran, replayed
}

// slotCounts are what checkSlots counted.
type slotCounts struct {
	slots, replays, claimedTwice, runTwice, postedTwice, notDelivered, unconfirmed int
	skipped, skippedDown, wrongSkip                                                int
}

// checkSlots checks every slot up to end: claimed once, run by one turn, its answer posted once
// and recorded delivered; the slots passed over between two runs were due when the later run
// was claimed.
func (c *schedChaos) checkSlots(runsOf map[string][]schedule.Run, end time.Time) slotCounts {
	t := c.t
	turnsOfSlot, replayedOf := c.slotTurns()
	answers := c.answers()
	var n slotCounts
	for _, j := range schedChaosJobs {
		rs := runsOf[j.name]
		sort.Slice(rs, func(a, b int) bool { return rs[a].Slot.Before(rs[b].Slot) })
		seen := map[int64]bool{}
		for k, r := range rs {
			if r.Slot.After(end) {
				continue
			}
			n.slots++
			if seen[r.Slot.Unix()] {
				n.claimedTwice++
				t.Errorf("%s: slot %s claimed twice", j.name, r.Slot)
			}
			seen[r.Slot.Unix()] = true
			tids := turnsOfSlot[r.EventKey]
			if len(tids) > 1 {
				n.runTwice++
				t.Errorf("%s: slot %s run by %d turns %v", j.name, r.Slot, len(tids), tids)
			}
			if len(replayedOf[r.EventKey]) > 0 {
				n.replays++
			}
			posted := 0
			for _, id := range append(tids, replayedOf[r.EventKey]...) {
				posted += answers[id]
			}
			switch {
			case posted > 1:
				n.postedTwice++
				t.Errorf("%s: slot %s answered %d times", j.name, r.Slot, posted)
			case posted == 1 && r.Outcome == schedule.OutcomeUnconfirmed:
				// Posted once and recorded unconfirmed: the outcome is not the truth (the turn's
				// posting, or the platform, shows the message).
				n.unconfirmed++
				t.Errorf("%s: slot %s posted once but recorded unconfirmed (%q), turns %v, replayed %v; want delivered", j.name, r.Slot, r.Error, tids, replayedOf[r.EventKey])
			case posted == 0 || r.Outcome != schedule.OutcomeDelivered:
				n.notDelivered++
				t.Errorf("%s: slot %s: outcome %q (%s), %d answers; want delivered once", j.name, r.Slot, r.Outcome, r.Error, posted)
			}
			if k > 0 {
				c.checkPassedOver(j.name, rs[k-1], r, &n)
			}
		}
	}
	return n
}

// checkPassedOver checks the slots between two runs prev and r: each must have been due
// (missed) when r was claimed, which catch-up then runs as the latest of them.
func (c *schedChaos) checkPassedOver(job string, prev, r schedule.Run, n *slotCounts) {
	for s := prev.Slot.Add(2 * time.Second); s.Before(r.Slot); s = s.Add(2 * time.Second) {
		n.skipped++
		if c.inDown(s) {
			n.skippedDown++
		}
		if s.After(r.ClaimedAt) {
			n.wrongSkip++
			c.t.Errorf("%s: slot %s skipped before it was due (the next run was claimed at %s)", job, s, r.ClaimedAt)
		}
	}
}

// checkCatchUps checks that after each outage every job ran a slot missed during it (catch-up's
// once and skip both run the latest missed slot when it is younger than max_lateness, resp. the
// grace), and returns how many did.
func (c *schedChaos) checkCatchUps(runsOf map[string][]schedule.Run) int {
	caughtUp := 0
	for _, o := range c.outages {
		for _, j := range schedChaosJobs {
			ok := false
			for _, r := range runsOf[j.name] {
				// The latest slot due at the first pass after the restart (o[1]: all ready).
				if !r.Slot.Before(o[0]) && !r.Slot.After(o[1].Add(2*time.Second)) && r.Outcome == schedule.OutcomeDelivered {
					ok = true
				}
			}
			if ok {
				caughtUp++
			} else {
				c.t.Errorf("%s: no slot missed during the outage %s–%s was run (catch-up %s runs the latest)", j.name, o[0].Format("15:04:05.000"), o[1].Format("15:04:05.000"), j.catchUp)
			}
		}
	}
	return caughtUp
}

// inDown reports whether s fell while a replica was down (from its kill to 2s after it was
// ready again, the first pass of its worker).
func (c *schedChaos) inDown(s time.Time) bool {
	for _, d := range c.down {
		if !s.Before(d[0].Add(-time.Second)) && !s.After(d[1].Add(2*time.Second)) {
			return true
		}
	}
	return false
}
