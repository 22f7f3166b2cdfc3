package discord

import (
	"sync"

	"github.com/bwmarrin/discordgo"

	"github.com/echogate/echogate"
)

// A message whose thread context needs a REST read (the channel's kind, the thread's history)
// is handled off the gateway reader, so a slow Discord API cannot stall event reading and the
// heartbeat ACKs read with them. Each channel with such work has a lane: one goroutine, owned
// by Run (spawn), that reads and delivers that channel's messages in the order they came; a
// later message of the same channel joins the lane even when it needs no read, so a channel's
// events keep their order. At most maxLanes lanes run at once (past that, a message goes
// without the thread's history) and each holds at most laneQueue messages (past that, the
// user is told to try again, as when the sink refuses).
const (
	maxLanes  = 8
	laneQueue = 32
)

// laneJob is one message for a lane: its event, and whether its author is admitted (only then
// is the thread read).
type laneJob struct {
	m     *discordgo.Message
	ev    echogate.InboundEvent
	botID string
	read  bool
}

// offer is what lanes.offer did with a message.
type offer uint8

const (
	offerNone    offer = iota // no lane: handle it on the reader (it needs no read)
	offerJoined               // queued behind its channel's running lane
	offerStarted              // a new lane holds it: start the lane's goroutine
	offerFull                 // its channel's lane is full: not taken
	offerNoLane               // it needs a read but maxLanes run: handle it without
)

// lanes holds the queued messages of each running lane; the first is the one being handled.
type lanes struct {
	mu sync.Mutex
	m  map[string][]laneJob
}

func (l *lanes) offer(ch string, job laneJob, needsRead bool) offer {
	l.mu.Lock()
	defer l.mu.Unlock()
	if q, ok := l.m[ch]; ok {
		if len(q) >= laneQueue {
			return offerFull
		}
		l.m[ch] = append(q, job)
		return offerJoined
	}
	if !needsRead {
		return offerNone
	}
	if len(l.m) >= maxLanes {
		return offerNoLane
	}
	if l.m == nil {
		l.m = map[string][]laneJob{}
	}
	l.m[ch] = []laneJob{job}
	return offerStarted
}

// next returns the lane's first message; when there is none the lane ends (false).
func (l *lanes) next(ch string) (laneJob, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.m[ch]
	if len(q) == 0 {
		delete(l.m, ch)
		return laneJob{}, false
	}
	return q[0], true
}

// done removes the lane's first message once handled.
func (l *lanes) done(ch string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if q := l.m[ch]; len(q) > 0 {
		q[0] = laneJob{}
		l.m[ch] = q[1:]
	}
}

// drop forgets a lane that could not start (Run has returned).
func (l *lanes) drop(ch string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, ch)
}

// handleMessage delivers a mapped message: on the reader when nothing must be read first,
// else through its channel's lane. A refused author's message costs no read; the sink still
// gets it, to record the refusal.
func (c *Channel) handleMessage(m *discordgo.Message, ev echogate.InboundEvent, botID string) {
	job := laneJob{m: m, ev: ev, botID: botID, read: c.admits(ev)}
	switch c.lanes.offer(m.ChannelID, job, job.read && c.needsRead(m)) {
	case offerJoined:
		return
	case offerStarted:
		if !c.spawn(func() { c.runLane(m.ChannelID) }) {
			c.lanes.drop(m.ChannelID) // Run has returned: nobody takes events any more
		}
		return
	case offerFull:
		c.log.Warn("discord: too many messages waiting for thread reads in this channel; message not taken", "event_id", ev.ID, "channel_id", m.ChannelID)
		c.tellBusy(ev)
		return
	case offerNoLane:
		c.log.Info("discord: too many thread reads at once; message goes without the thread's history", "event_id", ev.ID, "channel_id", m.ChannelID)
	}
	c.handleJob(job, false)
}

// runLane handles a channel's queued messages in order until none is left.
func (c *Channel) runLane(ch string) {
	for {
		job, ok := c.lanes.next(ch)
		if !ok {
			return
		}
		c.handleJob(job, true)
		c.lanes.done(ch)
	}
}

// deliverInOrder delivers an event that needs no read (a reaction, a button press, a command)
// behind the messages its channel's lane still holds, so a channel's events reach the sink in
// the order they came: a ✅ or 🛑 never overtakes the message before it. Without a running
// lane (or with a full one) it is delivered at once.
func (c *Channel) deliverInOrder(ch string, ev echogate.InboundEvent) {
	if c.lanes.offer(ch, laneJob{ev: ev}, false) == offerJoined {
		return
	}
	c.deliver(ev)
}

// handleJob adds the thread context (reading the platform only when mayRead) and delivers.
func (c *Channel) handleJob(job laneJob, mayRead bool) {
	if job.read {
		job.ev.ThreadContext = c.threadContext(job.m, job.botID, mayRead)
	}
	c.deliver(job.ev)
}

// admits reports whether the access rules (Config.Admits) let ev in; without them, everyone.
func (c *Channel) admits(ev echogate.InboundEvent) bool {
	return c.cfg.Admits == nil || c.cfg.Admits(ev)
}
