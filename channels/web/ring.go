package web

import (
	"unsafe"

	"github.com/echogate/echogate"
)

// ringLimits bound a session's replay buffer: at most events entries and about bytes bytes
// (the newest entry is kept whatever its size).
type ringLimits struct {
	events int
	bytes  int
}

// maxMerged is the most delta text one buffer entry holds; consecutive deltas of one turn share
// an entry up to it, so a long answer streamed a token at a time costs its text plus four bytes
// a delta, not a whole event each. Clients still receive every delta as its own event.
const maxMerged = 16 << 10

// entry is one buffered event, or a run of consecutive deltas of one turn stored as one: then
// ev.Seq is the id of the last of them, first the id of the first, text their concatenated text
// and offs[i] the offset in text where delta first+1+i starts.
type entry struct {
	ev    wireEvent
	first int64
	text  []byte
	offs  []int32
	size  int
	last  string // the text of the latest delta of the run, as it came (no copy for readers keeping up)
}

// appendAfter appends the events of the entry with an id above last to evs: a merged run is
// sent as the deltas it was made of, each with its own id (and the run's latest time).
func (e *entry) appendAfter(evs []wireEvent, last int64, limit int) []wireEvent {
	if e.text == nil {
		if e.ev.Seq > last {
			evs = append(evs, e.ev)
		}
		return evs
	}
	for seq := max(e.first, last+1); seq <= e.ev.Seq && (limit < 0 || len(evs) < limit); seq++ {
		from, to := 0, len(e.text)
		if i := seq - e.first; i > 0 {
			from = int(e.offs[i-1])
		}
		if i := seq - e.first; i < int64(len(e.offs)) {
			to = int(e.offs[i])
		}
		w := e.ev
		w.Seq = seq
		if seq == e.ev.Seq {
			w.Text = e.last
		} else {
			w.Text = textAt(e.text, from, to)
		}
		evs = append(evs, w)
	}
	return evs
}

// textAt returns text[from:to] as a string without copying it. The bytes of an entry's text are
// written once and never changed (push only appends past the end, and a grown array leaves the
// old one as it was), so the string stays valid and immutable.
func textAt(text []byte, from, to int) string {
	if to <= from {
		return ""
	}
	return unsafe.String(&text[from], to-from)
}

func entrySize(w *wireEvent) int {
	const overhead = 256 // the struct, the time and the ids' headers
	return overhead + len(w.Text) + len(w.Tool) + len(w.CallID) + len(w.Args) + len(w.EventID) +
		len(w.Turn) + len(w.Session) + len(w.Kind) + len(w.MessageID) + len(w.PromptID)
}

// ring is the bounded FIFO of a session's events, oldest first.
type ring struct {
	buf   []entry
	bytes int
}

func (r *ring) push(w wireEvent, lim ringLimits) {
	if n := len(r.buf); n > 0 && w.Type == echogate.TurnDelta {
		last := &r.buf[n-1]
		if last.ev.Type == echogate.TurnDelta && last.ev.Turn == w.Turn && last.ev.EventID == w.EventID &&
			last.ev.Seq == w.Seq-1 && len(last.ev.Text)+len(last.text)+len(w.Text) <= maxMerged {
			if last.text == nil {
				last.first = last.ev.Seq
				last.text = append(make([]byte, 0, 2*len(last.ev.Text)+len(w.Text)), last.ev.Text...)
				last.ev.Text = ""
			}
			last.offs = append(last.offs, int32(len(last.text)))
			last.text = append(last.text, w.Text...)
			last.ev.Seq, last.ev.Time, last.last = w.Seq, w.Time, w.Text
			grow := len(w.Text) + 4
			last.size += grow
			r.bytes += grow
			r.trim(lim)
			return
		}
	}
	e := entry{ev: w, size: entrySize(&w)}
	r.buf = append(r.buf, e)
	r.bytes += e.size
	r.trim(lim)
}

func (r *ring) trim(lim ringLimits) {
	drop := 0
	for len(r.buf)-drop > 1 && (len(r.buf)-drop > lim.events || r.bytes > lim.bytes) {
		r.bytes -= r.buf[drop].size
		drop++
	}
	if drop == 0 {
		return
	}
	r.drop(drop)
}

// drop removes the oldest n entries (callers account for their bytes), giving back the array
// when it became mostly empty.
func (r *ring) drop(n int) {
	kept := len(r.buf) - n
	if c := cap(r.buf); c > minRingCap && kept <= c/4 {
		buf := make([]entry, kept, max(minRingCap, 2*kept))
		copy(buf, r.buf[n:])
		r.buf = buf
		return
	}
	copy(r.buf, r.buf[n:])
	clear(r.buf[kept:])
	r.buf = r.buf[:kept]
}

// minRingCap is the smallest array a ring shrinks to: one short turn's entries.
const minRingCap = 8

// dropBefore removes the entries whose events all have an id below seq.
func (r *ring) dropBefore(seq int64) {
	n := 0
	for n < len(r.buf) && r.buf[n].ev.Seq < seq {
		r.bytes -= r.buf[n].size
		n++
	}
	if n > 0 {
		r.drop(n)
	}
}

// release forgets every entry and the array holding them.
func (r *ring) release() { *r = ring{} }

// after returns the events with an id above last, as a client that saw last receives them. gap
// is true when some of them were evicted already.
func (r *ring) after(last int64) (evs []wireEvent, gap bool) {
	return r.appendAfter(nil, last, -1)
}

// appendAfter is after appending to evs (a caller's buffer to reuse), stopping once evs holds
// limit events (limit < 0: no bound).
func (r *ring) appendAfter(evs []wireEvent, last int64, limit int) ([]wireEvent, bool) {
	gap := false
	if len(r.buf) == 0 {
		return evs, false
	}
	if first := r.firstSeq(); first > last+1 {
		gap = true
	}
	start := len(r.buf) // entries are in id order: visit only those past last
	for start > 0 && r.buf[start-1].ev.Seq > last {
		start--
	}
	for i := start; i < len(r.buf) && (limit < 0 || len(evs) < limit); i++ {
		evs = r.buf[i].appendAfter(evs, last, limit)
	}
	return evs, gap
}

func (r *ring) firstSeq() int64 {
	if e := r.buf[0]; e.text != nil {
		return e.first
	}
	return r.buf[0].ev.Seq
}

// fromLast returns the events from the last one of type typ on (every event when none is
// buffered), reading only those entries.
func (r *ring) fromLast(typ echogate.TurnEventType) []wireEvent {
	from := 0
	for i := len(r.buf) - 1; i >= 0; i-- {
		if r.buf[i].ev.Type == typ {
			from = i
			break
		}
	}
	var evs []wireEvent
	for i := from; i < len(r.buf); i++ {
		evs = r.buf[i].appendAfter(evs, -1, -1)
	}
	return evs
}

// ofEvent returns the events of one inbound event, reading only its entries.
func (r *ring) ofEvent(eventID string) []wireEvent {
	var evs []wireEvent
	for i := range r.buf {
		if r.buf[i].ev.EventID == eventID {
			evs = r.buf[i].appendAfter(evs, -1, -1)
		}
	}
	return evs
}

// items returns the buffered events oldest first, in a new slice.
func (r *ring) items() []wireEvent {
	evs, _ := r.after(-1)
	return evs
}
