package agent

import (
	"github.com/echogate/echogate"
)

// msgHeadroom is the room adopt leaves after the messages for the ones the turn adds (an
// answer, a few rounds of tool calls and results) before state.Messages must grow.
const msgHeadroom = 8

// adopt makes a copy of msgs the state's messages, in a new buf: a free slot before them for
// the system message, room after them for the turn's own.
func (r *runner) adopt(msgs []echogate.Message) {
	buf := make([]echogate.Message, 1+len(msgs), 1+len(msgs)+msgHeadroom)
	copy(buf[1:], msgs)
	r.setBuf(buf)
}

// adoptInput makes a new run's messages the state's: in place in in.Buf when it holds them (see
// Input.Buf), else in a copy (adopt).
func (r *runner) adoptInput(in Input) {
	if !heldAfterSlot(in.Messages, in.Buf) {
		r.adopt(in.Messages)
		return
	}
	buf := in.Buf[:1+len(in.Messages)]
	buf[0] = echogate.Message{}
	r.setBuf(buf)
}

// setBuf makes buf[1:] the state's messages; buf[0] is not yet the system message.
func (r *runner) setBuf(buf []echogate.Message) {
	r.buf, r.state.Messages, r.sysSet = buf, buf[1:], false
}

// heldAfterSlot reports whether msgs is buf[1:1+len(msgs)] with the rest of buf's capacity:
// the messages live in buf right after its system message's slot.
func heldAfterSlot(msgs, buf []echogate.Message) bool {
	return len(buf) > 0 && cap(msgs) == cap(buf)-1 && (len(msgs) == 0 || &msgs[0] == &buf[:2][1])
}

// requestMessages returns a request's messages: the system message sys (none when empty), then
// the state's messages. While the state's messages still live in buf, and sys is the system
// message of the earlier requests, that is a view of buf, not a copy; otherwise the messages
// move to a new buf first (a compaction replaced them, they outgrew it, or the plan changed
// sys: a request given earlier must keep its own system message). The view is capped at its
// length, so an append to it copies instead of writing into buf.
func (r *runner) requestMessages(sys string) []echogate.Message {
	n := len(r.state.Messages)
	if sys == "" {
		return r.state.Messages[:n:n]
	}
	inBuf := n > 0 && heldAfterSlot(r.state.Messages, r.buf)
	if !inBuf || (r.sysSet && r.buf[0].Content != sys) {
		r.adopt(r.state.Messages)
	}
	if !r.sysSet {
		r.buf[0] = echogate.Message{Role: echogate.RoleSystem, Content: sys}
		r.sysSet = true
	}
	return r.buf[: 1+n : 1+n]
}
