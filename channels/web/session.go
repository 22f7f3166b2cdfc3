package web

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/echogate/echogate"
)

// typeNotice is the SSE event type of a message sent while no turn of the session runs.
const typeNotice echogate.TurnEventType = "notice"

// wireEvent is the JSON of one SSE event: the turn event (Seq replaced by the channel's own
// per-session id, which is also the SSE id) plus what the page needs to act on it.
type wireEvent struct {
	echogate.TurnEvent
	// Kind is set on notice events: assistant, notice, approval_prompt or plan.
	Kind string `json:"kind,omitempty"`
	// MessageID is the id of the message a notice shows (the MessageRef.ID returned by Send).
	MessageID string `json:"message_id,omitempty"`
	// PromptID is the approval prompt message of an approval request, when it was already posted.
	PromptID string `json:"prompt_id,omitempty"`
}

// terminal reports the event that ends a turn's stream: done, which also follows an error.
func (w wireEvent) terminal() bool { return w.Type == echogate.TurnDone }

// Entry is one message of a session's history.
type Entry struct {
	ID   string    `json:"id"`   // "m<N>" for the gateway's messages, the event id for the user's
	Role string    `json:"role"` // user, assistant, notice, approval_prompt, plan or tool
	User string    `json:"user,omitempty"`
	Text string    `json:"text"`
	Turn string    `json:"turn,omitempty"`
	At   time.Time `json:"at"`
	// A tool row (role tool, from the stored transcript): the call, and its result once stored.
	CallID  string `json:"call_id,omitempty"`
	Tool    string `json:"tool,omitempty"`
	Args    string `json:"args,omitempty"`
	Result  string `json:"result,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
}

// Pending is an approval prompt waiting for a decision.
type Pending struct {
	PromptID string `json:"prompt_id,omitempty"` // empty until the prompt message was sent
	CallID   string `json:"call_id,omitempty"`   // empty until the approval_request event arrived
	Tool     string `json:"tool,omitempty"`
	Args     string `json:"args,omitempty"`
	Text     string `json:"text,omitempty"`
	Turn     string `json:"turn,omitempty"`
	// RequestedBy names whose request waits (a display name), when the store told it.
	RequestedBy string `json:"requested_by,omitempty"`
}

// Snapshot is the state of one session as History reports it.
type Snapshot struct {
	Session     string    `json:"session"`
	Running     bool      `json:"running"`       // a turn of the session is running
	LastEventID int64     `json:"last_event_id"` // the id of the session's latest SSE event
	Messages    []Entry   `json:"messages"`
	Pending     []Pending `json:"pending"`
}

// subscriber is one SSE stream attached to a session. It holds no events of its own: it reads
// the session's replay buffer from its cursor, woken by wake (capacity 1, so a publish never
// blocks). A stream falls behind only when the buffer evicted events it had not read yet. wake is
// closed by whoever removes it from the session (the stream itself, eviction). Guarded by
// its session's mu.
type subscriber struct {
	wake    chan struct{}
	next    int64  // the id of the next event to send
	eventID string // only events of this inbound event; "" means every event
	lazy    bool   // in its flush window: woken only for what must go out at once (needsWake)
	tokens  bool   // a delta was written to the stream
	shown   bool   // the stream was flushed to the client (its headers went out)
}

func (s *subscriber) wants(w wireEvent) bool { return s.eventID == "" || w.EventID == s.eventID }

type prompt struct {
	ref                            echogate.MessageRef
	callID, tool, args, turn, text string
	decided                        []string // ids of the decision events submitted for it
}

// session is the state of one web session. All fields but id are guarded by mu.
type session struct {
	mu         sync.Mutex
	id         string
	dropped    bool // no longer in Channel.sessions: a lookup that raced its eviction looks again
	lastActive time.Time

	events  ring  // replay buffer, also what the attached streams read
	lastSeq int64 // id of the latest event

	subs map[*subscriber]struct{}

	running      bool   // a turn event other than done/error was the latest
	runningEvent string // EventID of the running turn
	lastTurn     string // Turn of the latest done
	lastFinal    string // Text of the latest done

	// queued holds events accepted by the sink whose turn has not shown an event yet.
	queued map[string]time.Time

	history      []Entry
	historyBytes int // entryBytes of history
	msgSeq       int64
	prompts      []*prompt

	// answered remembers the latest turns of messages with a client id (their retries are
	// answered from it once the replay buffer is gone), oldest first.
	answered []answered
}

// answered is the outcome of the turn of a message with a client id.
type answered struct{ eventID, turn, status string }

// maxAnswered bounds session.answered.
const maxAnswered = 4

// clientEventPrefix starts the event id of a message with a client id (see handleChat).
const clientEventPrefix = "c."

// newSession returns an empty session; its maps are made when first needed, so a session that
// only keeps history costs little.
func newSession(id string, now time.Time) *session {
	return &session{id: id, lastActive: now}
}

// publish numbers w, buffers it and wakes the attached streams without blocking. It returns how
// many bytes the replay buffer grew by (negative when it shrank).
//
// A turn's start drops the earlier turns' events that no attached stream still has to read: a
// re-attach without Last-Event-ID replays from the latest start anyway, and one with an older id
// is told about the gap.
func (s *session) publish(w wireEvent, lim ringLimits) int {
	s.lastSeq++
	w.Seq = s.lastSeq
	if w.Session == "" {
		w.Session = echogate.SessionKey(echogate.PlatformWeb + ":" + s.id)
	}
	before := s.events.bytes
	if w.Type == echogate.TurnStarted {
		oldest := w.Seq
		for sub := range s.subs {
			oldest = min(oldest, sub.next)
		}
		s.events.dropBefore(oldest)
	}
	s.events.push(w, lim)
	for sub := range s.subs {
		if !sub.wants(w) || !s.needsWake(sub, &w, lim) {
			continue
		}
		select {
		case sub.wake <- struct{}{}:
		default: // already woken; it reads everything up to the head
		}
	}
	return s.events.bytes - before
}

// releasable reports whether the session's replay buffer may be given back: no turn runs or
// is queued and no stream reads it.
func (s *session) releasable() bool {
	return !s.running && len(s.queued) == 0 && len(s.subs) == 0 && len(s.events.buf) > 0
}

// releaseReplay forgets the replay buffer and returns the bytes it held. Event ids go on from
// lastSeq, so a client re-attaching with an older id sees nothing to replay and no turn to follow.
func (s *session) releaseReplay() int {
	n := s.events.bytes
	s.events.release()
	if len(s.subs) == 0 {
		s.subs = nil
	}
	if len(s.queued) == 0 {
		s.queued = nil
	}
	if cap(s.history) > len(s.history)+len(s.history)/4 {
		s.history = slices.Clone(s.history)
	}
	return n
}

// queue records that the sink accepted event id at now and its turn has not shown yet.
func (s *session) queue(id string, now time.Time) {
	if s.queued == nil {
		s.queued = make(map[string]time.Time)
	}
	s.queued[id] = now
}

// pending appends the events sub has not read yet to buf (reusing its array) and moves its
// cursor past them. behind is true when some were evicted before it read them; more when the
// batch stopped at maxBatch events.
func (s *session) pending(sub *subscriber, buf []wireEvent) (evs []wireEvent, behind, more bool) {
	all, gap := s.events.appendAfter(buf[:0], sub.next-1, maxBatch)
	sub.next = s.lastSeq + 1
	if n := len(all); n > 0 && all[n-1].Seq < s.lastSeq {
		sub.next, more = all[n-1].Seq+1, true
	}
	evs = all[:0]
	for _, e := range all {
		if sub.wants(e) {
			evs = append(evs, e)
		}
	}
	clear(evs[len(evs):len(all)])
	return evs, gap, more
}

// maxBatch bounds the events a stream takes from the buffer at once (and so its own buffer).
const maxBatch = 256

// observe updates the turn state of the session from one turn event.
func (s *session) observe(ev echogate.TurnEvent, now time.Time) {
	s.lastActive = now
	if ev.EventID != "" {
		delete(s.queued, ev.EventID)
		s.removePrompts(func(p *prompt) bool { return slices.Contains(p.decided, ev.EventID) })
	}
	switch ev.Type {
	case echogate.TurnDone, echogate.TurnError:
		s.running = false
		s.runningEvent = ""
		if ev.Type == echogate.TurnDone {
			s.lastTurn, s.lastFinal = ev.Turn, ev.Text
			if strings.HasPrefix(ev.EventID, clientEventPrefix) {
				if len(s.answered) >= maxAnswered {
					s.answered = slices.Delete(s.answered, 0, 1)
				}
				s.answered = append(s.answered, answered{ev.EventID, ev.Turn, wireStatus(ev.Status)})
			}
		}
	default:
		s.running = true
		s.runningEvent = ev.EventID
	}
	switch ev.Type {
	case echogate.TurnApprovalRequest:
		s.attachPromptCall(ev)
	case echogate.TurnToolResult:
		s.removeCall(ev.CallID)
	}
}

// subscribe attaches a stream that reads the events published from now on.
func (s *session) subscribe(eventID string) *subscriber {
	sub := &subscriber{wake: make(chan struct{}, 1), next: s.lastSeq + 1, eventID: eventID}
	if s.subs == nil {
		s.subs = make(map[*subscriber]struct{})
	}
	s.subs[sub] = struct{}{}
	return sub
}

// unsubscribe removes sub unless it was removed already.
func (s *session) unsubscribe(sub *subscriber) {
	if _, ok := s.subs[sub]; ok {
		delete(s.subs, sub)
		close(sub.wake)
	}
}

// attachPromptRef records the approval prompt message ref for out and returns the call id it
// prompts for, when the approval_request event arrived first.
func (s *session) attachPromptRef(ref echogate.MessageRef, out echogate.Outbound, _ time.Time) string {
	var match *prompt
	for _, p := range s.prompts {
		if !p.ref.IsZero() {
			continue
		}
		if p.turn == out.Turn {
			match = p
			break
		}
		if match == nil && (p.turn == "" || out.Turn == "") {
			match = p
		}
	}
	if match == nil {
		match = &prompt{turn: out.Turn}
		s.addPrompt(match)
	}
	match.ref = ref
	match.text = out.Text
	return match.callID
}

// attachPromptCall records the call of an approval_request event, joining it to a prompt message
// sent before it.
func (s *session) attachPromptCall(ev echogate.TurnEvent) {
	var match *prompt
	for _, p := range s.prompts {
		// The same call, unless it is another turn's: a model may number its calls per
		// conversation, so a later pause can reuse an earlier one's id.
		if ev.CallID != "" && p.callID == ev.CallID && (p.turn == "" || ev.Turn == "" || p.turn == ev.Turn) {
			match = p
			break
		}
		if p.callID != "" {
			continue
		}
		if p.turn == ev.Turn && match == nil {
			match = p
		}
		if match == nil && (p.turn == "" || ev.Turn == "") {
			match = p
		}
	}
	if match == nil {
		match = &prompt{turn: ev.Turn, text: ev.Text}
		s.addPrompt(match)
	}
	match.callID, match.tool, match.args = ev.CallID, ev.Tool, ev.Args
	if match.text == "" {
		match.text = ev.Text
	}
}

func (s *session) addPrompt(p *prompt) {
	if len(s.prompts) >= maxPrompts {
		s.prompts[0] = nil
		s.prompts = s.prompts[1:]
	}
	s.prompts = append(s.prompts, p)
}

func (s *session) removeCall(callID string) {
	if callID == "" {
		return
	}
	s.removePrompts(func(p *prompt) bool { return p.callID == callID })
}

func (s *session) removePrompts(drop func(*prompt) bool) {
	kept := s.prompts[:0]
	for _, p := range s.prompts {
		if !drop(p) {
			kept = append(kept, p)
		}
	}
	clear(s.prompts[len(kept):])
	s.prompts = kept
}

// promptByCall is the newest prompt of callID: an older one of a reused id was decided.
func (s *session) promptByCall(callID string) *prompt {
	for i := len(s.prompts) - 1; i >= 0; i-- {
		if p := s.prompts[i]; callID != "" && p.callID == callID {
			return p
		}
	}
	return nil
}

func (s *session) promptByRef(id string) *prompt {
	for _, p := range s.prompts {
		if id != "" && p.ref.ID == id {
			return p
		}
	}
	return nil
}

func (s *session) snapshot() Snapshot {
	snap := Snapshot{
		Session:     s.id,
		Running:     s.running,
		LastEventID: s.lastSeq,
		Messages:    append([]Entry{}, s.history...),
		Pending:     make([]Pending, 0, len(s.prompts)),
	}
	for _, p := range s.prompts {
		snap.Pending = append(snap.Pending, Pending{
			PromptID: p.ref.ID, CallID: p.callID, Tool: p.tool, Args: p.args, Text: p.text, Turn: p.turn,
		})
	}
	return snap
}

// replayAfter returns the buffered events with an id above last. gap is true when events after
// last were already evicted from the buffer.
func (s *session) replayAfter(last int64) (evs []wireEvent, gap bool) {
	return s.events.after(last)
}

// replayLatestTurn returns the buffered events from the start of the latest turn (everything
// when no start is buffered).
func (s *session) replayLatestTurn() []wireEvent {
	return s.events.fromLast(echogate.TurnStarted)
}

// replayEvent returns the buffered events of one inbound event's turn(s). When they are no longer
// buffered but the event's turn ended, it returns a done event of that turn (its text taken from
// the history).
func (s *session) replayEvent(eventID string, now time.Time) []wireEvent {
	if evs := s.events.ofEvent(eventID); len(evs) > 0 {
		return evs
	}
	for _, a := range slices.Backward(s.answered) {
		if a.eventID != eventID {
			continue
		}
		done := wireEvent{TurnEvent: echogate.TurnEvent{Type: echogate.TurnDone,
			Session: echogate.SessionKey(echogate.PlatformWeb + ":" + s.id), Turn: a.turn,
			Status: a.status, EventID: eventID, Time: now}}
		for _, e := range slices.Backward(s.history) {
			if e.Role == "assistant" && e.Turn == a.turn {
				done.Text = e.Text
				break
			}
		}
		return []wireEvent{done}
	}
	return nil
}
