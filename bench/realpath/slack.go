package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/echogate/echogate/channels/slack/slacktest"
)

// The Slack scenario: turns through Slack Socket Mode instead of POST /api/chat. The fake Slack
// (channels/slack/slacktest: Web API + Socket Mode) runs in this process, a second gateway
// process connects to it with SLACK_BOT_TOKEN / SLACK_APP_TOKEN / SLACK_API_URL, and each turn
// is a DM pushed as an events_api envelope; the turn ends when the answer's final message
// (the one naming its turn in its metadata, no longer streaming) is in the fake. Its overhead is
// that latency minus the direct model call, as for the web turns; CPU per turn from /proc.
//
// The gateway gives each Slack channel an outbound budget of about one call a second (as Slack
// rate-limits chat.postMessage), so the turns go round -slack-channels DMs: with enough of them
// no turn waits for its channel's budget and the figure is the gateway's work, not the limiter.

var (
	slackFlag     = flag.Bool("slack", true, "also run the overhead scenarios through Slack Socket Mode (a fake Slack in this process)")
	slackChannels = flag.Int("slack-channels", 1000, "DM channels the Slack turns go round (each has its own outbound budget)")
)

// benchUser is the Slack user who sends the DMs.
const benchUser = "U0BENCH"

// slackRun is one Slack scenario run: the fake Slack and the gateway connected to it.
type slackRun struct {
	b    *bench
	srv  *slacktest.Server
	gw   *process
	seq  atomic.Int64         // message timestamps
	seen map[string]int       // channel → final answers seen so far
	last map[string]time.Time // channel → when its previous turn ended
}

// slackOverheads starts a gateway on its own data dir connected to a fake Slack and runs the
// plain and one-tool turns through it. tmp holds the data dir and the log.
func (b *bench) slackOverheads(base gatewayOpts, tmp string) error {
	srv := slacktest.New(slacktest.Options{})
	defer srv.Close()
	srv.AddUser(slacktest.User{ID: benchUser, Name: "bench", DisplayName: "Bench", RealName: "Bench User"})
	o := base
	o.args = nil
	if *profileDir != "" {
		o.args = []string{"-cpuprofile", filepath.Join(*profileDir, "slack-cpu.pprof")}
	}
	o.dataDir = filepath.Join(tmp, "slack-data")
	o.logFile = filepath.Join(tmp, "gateway-slack.log")
	o.extraEnv = append(append([]string(nil), base.extraEnv...),
		"SLACK_BOT_TOKEN="+srv.BotToken(), "SLACK_APP_TOKEN="+srv.AppToken(), "SLACK_API_URL="+srv.APIURL())
	if err := os.MkdirAll(o.dataDir, 0o755); err != nil {
		return err
	}
	// startGateway returns once /readyz is 200, which needs the Socket Mode connection.
	gw, _, ready, err := startGateway(b.ctx, o)
	if err != nil {
		return fmt.Errorf("slack gateway: %w", err)
	}
	defer gw.stop()
	r := &slackRun{b: b, srv: srv, gw: gw, seen: map[string]int{}, last: map[string]time.Time{}}
	fmt.Printf("\nSlack Socket Mode (fake Slack in the load generator; %d DM channels; exec → ready incl. the connection %s)\n", *slackChannels, ms(ready))
	fmt.Printf("%-22s %8s %14s %14s %14s %12s %14s\n", "overhead scenario", "turns", "turn p50", "overhead p50", "overhead p99", "CPU/turn", "others/turn")
	for _, sc := range []struct{ name, prefix, tag string }{{"slack DM turn", "", "P"}, {"slack one-tool turn", toolPrefix, "T"}} {
		if _, err := r.turns(sc.prefix, "W"+sc.tag, 20); err != nil {
			return err
		}
		cpu0, err := cpuTime(gw.pid())
		if err != nil {
			return err
		}
		other0 := b.othersCPU()
		lat, err := r.turns(sc.prefix, sc.tag, *turnsFlag)
		if err != nil {
			return err
		}
		cpu1, _ := cpuTime(gw.pid())
		other1 := b.othersCPU()
		slices.Sort(lat)
		n := time.Duration(len(lat))
		fmt.Printf("%-22s %8d %14s %14s %14s %12s %14s\n", sc.name, len(lat), ms(pct(lat, 50)),
			ms(pct(lat, 50)-b.direct50), ms(pct(lat, 99)-b.direct99), ms((cpu1-cpu0)/n), ms((other1-other0)/n))
	}
	return gw.stop()
}

// turns runs n turns one after the other, going round the DM channels named by tag, and
// returns their latencies (envelope pushed → final answer in the fake).
func (r *slackRun) turns(prefix, tag string, n int) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	chans := max(1, min(*slackChannels, n))
	for i := range n {
		ch := fmt.Sprintf("D%s%06d", tag, i%chans)
		// A channel's budget refills at about one call a second: a channel used again too
		// soon would measure the limiter. Wait out the rest of a second (rare with enough
		// channels; the wait is not part of any turn's latency).
		if t, ok := r.last[ch]; ok {
			time.Sleep(time.Until(t.Add(time.Second)))
		}
		d, err := r.turn(ch, prefix+fmt.Sprintf("message %d", i))
		if err != nil {
			return nil, fmt.Errorf("slack turn %d in %s: %w", i, ch, err)
		}
		r.last[ch] = time.Now()
		lat = append(lat, d)
	}
	return lat, nil
}

// turn pushes one DM to ch and waits for its final answer.
func (r *slackRun) turn(ch, text string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(r.b.ctx, 30*time.Second)
	defer cancel()
	us := 1_700_000_000_000_000 + r.seq.Add(1)*100
	ts := fmt.Sprintf("%d.%06d", us/1e6, us%1e6)
	want := r.seen[ch] + 1
	start := time.Now()
	if _, err := r.srv.Push(slacktest.DM(ch, benchUser, ts, text), slacktest.Delivery{}); err != nil {
		return 0, err
	}
	err := r.srv.WaitFor(ctx, func() bool { return r.finals(ch) >= want })
	took := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("no final answer: %w", err)
	}
	r.seen[ch] = want
	return took, nil
}

// finals counts the complete answers in ch: the bot's messages that name their turn in their
// metadata and are not streaming any more.
func (r *slackRun) finals(ch string) int {
	n := 0
	for _, m := range r.srv.BotMessages(ch) {
		if !m.Streaming && strings.Contains(string(m.Metadata), `"turn"`) {
			n++
		}
	}
	return n
}
