package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/discord/discordtest"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

// rsession is one conversation of a replica chaos run, on one of four paths.
type rsession struct {
	r        *rchaos
	i        int
	kind     string // "socket" (Slack Socket Mode), "events" (Slack Events API), "discord", "web"
	platform string
	user     string
	ch       string // the Slack or Discord DM channel
	duser    discordtest.User
}

func (r *rchaos) session(i int) *rsession {
	s := &rsession{r: r, i: i}
	switch i % 4 {
	case 0, 1:
		s.kind, s.platform = "socket", echogate.PlatformSlack
		if i%4 == 1 {
			s.kind = "events"
		}
		s.user, s.ch = fmt.Sprintf("U%07d", 200+i), fmt.Sprintf("D%07d", 200+i)
	case 2:
		s.kind, s.platform, s.user = "discord", echogate.PlatformDiscord, fmt.Sprintf("5%017d", 200+i)
		s.duser = discordtest.User{ID: s.user, Username: fmt.Sprintf("user%d", i)}
	default:
		s.kind, s.platform, s.user = "web", echogate.PlatformWeb, fmt.Sprintf("u-r%d", i)
	}
	return s
}

// webSession is the web chat's session id of s.
func (s *rsession) webSession() string { return fmt.Sprintf("r%d", s.i) }

// run sends the session's messages one after the other, each once the previous one was answered.
func (s *rsession) run() error {
	for k := 0; k < *rchaosMessages; k++ {
		if k == *rchaosMessages-1 && s.r.hold != nil {
			<-s.r.hold
		}
		tag := fmt.Sprintf("[r%d-m%d]", s.i, k)
		tool := k%3 == 1
		text := "chaos " + tag
		if tool {
			text = "run it " + tag
		}
		s.r.mu.Lock()
		s.r.waiting[tag] = true
		s.r.mu.Unlock()
		sent := time.Now()
		if err := s.send(k, text); err != nil {
			return fmt.Errorf("%s %s: %w", s.kind, tag, err)
		}
		if err := s.await(tag, tool); err != nil {
			return fmt.Errorf("%s %s: %w", s.kind, tag, err)
		}
		s.r.mu.Lock()
		delete(s.r.waiting, tag)
		s.r.latency = append(s.r.latency, msgLatency{sent: sent, answered: time.Now(), tool: tool})
		s.r.mu.Unlock()
		s.r.answered.Add(1)
	}
	return nil
}

// send delivers one user message the way its platform does, until the platform knows it was
// taken: Socket Mode redelivers what no connection acknowledged, the Events API and the web
// chat are retried through the load balancer until a replica answers 200.
func (s *rsession) send(k int, text string) error {
	ts := fmt.Sprintf("%d.%06d", 1700000000+s.i*1000+k, 100)
	evID := fmt.Sprintf("Ev%016x", rand.Uint64())
	switch s.kind {
	case "socket":
		s.r.slack.Deliver(slacktest.DM(s.ch, s.user, ts, text), slacktest.Delivery{EventID: evID})
		return nil
	case "events":
		inner := slacktest.DM(s.ch, s.user, ts, text)
		s.r.slack.RecordPost(inner)
		return s.r.postEvent(func() string { return s.r.lb.URL }, evID, inner)
	case "discord":
		if err := s.r.discord.WaitFor(30*time.Second, "a replica on the gateway", func() bool { return s.r.discord.ReadyConnections() > 0 }); err != nil {
			return err
		}
		s.ch = s.r.discord.SendDM(s.duser, text).ChannelID
		return nil
	default:
		return s.webSend(text, fmt.Sprintf("m-%d-%d", s.i, k))
	}
}

// postEvent POSTs a signed Events API callback to base()+"/slack/events" until it is answered
// 200, with X-Slack-Retry-Num counting the attempts as Slack does.
func (r *rchaos) postEvent(base func() string, evID string, inner map[string]any) error {
	body := slacktest.Callback(r.slack.TeamID(), evID, inner)
	var last string
	for attempt := 0; attempt < 300; attempt++ {
		if attempt > 0 {
			r.noteResend("events", last)
			time.Sleep(100 * time.Millisecond) // Slack's retries are spaced too
		}
		b := base()
		if b == "" {
			last = "no replica to send to"
			continue
		}
		resp, err := http.DefaultClient.Do(slacktest.EventsRequest(b+"/slack/events", rchaosSecret, body, time.Now(), attempt))
		if err != nil {
			last = err.Error()
			continue
		}
		msg := new(bytes.Buffer)
		_, _ = msg.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		last = resp.Status + " " + strings.TrimSpace(msg.String())
	}
	return fmt.Errorf("event %s never taken: %s", evID, last)
}

// webSend POSTs the message to /api/chat through the load balancer until a replica answers
// 200 (the message taken), sending it again with the same id otherwise.
func (s *rsession) webSend(text, id string) error {
	body, _ := json.Marshal(map[string]string{"session": s.webSession(), "user": s.user, "text": text, "id": id})
	var last string
	for attempt := 0; attempt < 300; attempt++ {
		if attempt > 0 {
			s.r.noteResend("web", last)
			time.Sleep(100 * time.Millisecond) // a client's retry delay
		}
		resp, err := http.Post(s.r.lb.URL+"/api/chat", "application/json", bytes.NewReader(body))
		if err != nil {
			last = err.Error()
			continue
		}
		if resp.StatusCode != http.StatusOK {
			b := new(bytes.Buffer)
			_, _ = b.ReadFrom(resp.Body)
			resp.Body.Close()
			last = resp.Status + " " + oneLine(b.String(), 120)
			continue
		}
		// 200 says a replica took the message (the web chat answers it once the pipeline
		// has the message durably); the answer is read from the transcript. The stream is
		// read aside: one still open when the answer is there never ends for its reader
		// (counted in check).
		s.r.streams.Go(func() { s.r.readStream(resp, id) })
		return nil
	}
	return fmt.Errorf("web message %s never taken: %s", id, last)
}

// readStream reads a chat stream to its end; one still open once the run is checked is
// closed there and counted.
func (r *rchaos) readStream(resp *http.Response, id string) {
	defer resp.Body.Close()
	r.mu.Lock()
	r.open[id] = resp
	r.mu.Unlock()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
	}
	r.mu.Lock()
	delete(r.open, id)
	r.mu.Unlock()
}

// await waits for tag's answer, approving each new approval of a tool message on the way.
func (s *rsession) await(tag string, tool bool) error {
	decided := map[string]bool{}
	for deadline := time.Now().Add(120 * time.Second); time.Now().Before(deadline); {
		if s.answers(tag) > 0 {
			return nil
		}
		if tool {
			s.approvePending(tag, decided)
		}
		time.Sleep(100 * time.Millisecond) // polling fakes and three processes' HTTP APIs: nothing to wait on
	}
	return fmt.Errorf("no answer within 120s")
}

// answers counts the complete answers of tag where the user sees them: the platform's
// messages (Slack's final message names its turn in its metadata; a stream a kill cut short
// does not end in "(end)"), the web chat's transcript.
func (s *rsession) answers(tag string) int {
	n := 0
	switch s.kind {
	case "socket", "events":
		for _, m := range s.r.slack.BotMessages(s.ch) {
			if !m.Deleted && strings.Contains(m.Text, "answer "+tag) && strings.Contains(m.Text, "(end)") && strings.Contains(string(m.Metadata), `"turn"`) {
				n++
			}
		}
	case "discord":
		if s.ch == "" {
			return 0
		}
		for _, m := range s.r.discord.BotMessages(s.ch) {
			if !m.Deleted && strings.Contains(m.Content, "answer "+tag) && strings.Contains(m.Content, "(end)") {
				n++
			}
		}
	default:
		var hist []echogate.StoredMessage
		if s.r.fetch("/api/sessions/transcript?session="+url.QueryEscape("web:"+s.webSession())+"&limit=1000", &hist) != nil {
			return 0
		}
		for _, m := range hist {
			if m.Message.Role == echogate.RoleAssistant && strings.Contains(m.Message.Content, "answer "+tag) {
				n++
			}
		}
	}
	return n
}

// fetch GETs path from a running replica into v.
func (r *rchaos) fetch(path string, v any) error {
	live := r.rs.live(-1)
	if len(live) == 0 {
		return fmt.Errorf("no replica running")
	}
	base := r.rs.base(live[rand.IntN(len(live))])
	resp, err := http.Get(base + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s = %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
