package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sseWriter writes Server-Sent Events in batches, each batch one write bounded by a write
// deadline, flushed at once (events) or by the caller (buffer). It holds no buffer of its own:
// each batch is encoded into a scratch taken from scratches for that write only, so a stream
// waiting for its turn's next event (most of a turn, with a model taking hundreds of
// milliseconds) holds a few words, and a thousand waiting streams share the scratches of the
// few that write at that moment.
type sseWriter struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	timeout  time.Duration
	deadline time.Time // the connection's write deadline (see armDeadline)
}

// sseScratch is what writing one batch needs: the encoded bytes, an encoder for the events
// appendEvent leaves to encoding/json, and the batch read from the replay buffer (see follow).
type sseScratch struct {
	buf bytes.Buffer
	enc *json.Encoder // writes into buf
	evs []wireEvent
	one [1]wireEvent
}

// scratches holds the scratches not in use. One that grew past maxPooledBuf or maxBatch events
// (a long answer replayed at once) is not kept.
var scratches = sync.Pool{New: func() any {
	sc := &sseScratch{}
	sc.enc = json.NewEncoder(&sc.buf)
	return sc
}}

const maxPooledBuf = 64 << 10

func getScratch() *sseScratch { return scratches.Get().(*sseScratch) }

// put gives sc back; the caller must not use it (or a slice of its evs) afterwards.
func (sc *sseScratch) put() {
	if sc.buf.Cap() > maxPooledBuf || cap(sc.evs) > maxBatch {
		return
	}
	sc.buf.Reset()
	clear(sc.evs[:cap(sc.evs)]) // the events' strings are the replay buffer's
	sc.evs = sc.evs[:0]
	sc.one[0] = wireEvent{}
	scratches.Put(sc)
}

func (c *Channel) startSSE(w http.ResponseWriter, session string) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache, no-store")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Echogate-Session", session)
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, rc: http.NewResponseController(w), timeout: c.cfg.WriteTimeout}
}

func (s *sseWriter) event(e wireEvent) error {
	sc := getScratch()
	defer sc.put()
	sc.one[0] = e
	return s.eventsWith(sc, sc.one[:])
}

// events writes evs with one write and one flush.
func (s *sseWriter) events(evs []wireEvent) error {
	if len(evs) == 0 {
		return nil
	}
	sc := getScratch()
	defer sc.put()
	return s.eventsWith(sc, evs)
}

func (s *sseWriter) eventsWith(sc *sseScratch, evs []wireEvent) error {
	if err := s.bufferWith(sc, evs); err != nil {
		return err
	}
	return s.flush()
}

// bufferWith writes evs, encoded in sc, with one write to the response, without flushing it:
// they reach the client with the next flush, or once the response's own buffer fills. evs may
// be sc.evs.
func (s *sseWriter) bufferWith(sc *sseScratch, evs []wireEvent) error {
	sc.buf.Reset()
	for _, e := range evs {
		if err := sc.append(e); err != nil {
			return err
		}
	}
	return s.write(&sc.buf)
}

// append encodes e into buf as one SSE event.
func (sc *sseScratch) append(e wireEvent) error {
	mark := sc.buf.Len()
	if e.Seq > 0 {
		var num [20]byte
		sc.buf.WriteString("id: ")
		sc.buf.Write(strconv.AppendInt(num[:0], e.Seq, 10))
		sc.buf.WriteByte('\n')
	}
	sc.buf.WriteString("event: ")
	writeField(&sc.buf, string(e.Type))
	sc.buf.WriteString("\ndata: ")
	// JSON escapes every newline.
	if data, ok := appendEvent(sc.buf.AvailableBuffer(), &e); ok {
		sc.buf.Write(data)
		sc.buf.WriteString("\n\n")
	} else if err := sc.enc.Encode(e); err != nil { // Encode ends with a newline
		sc.buf.Truncate(mark)
		return fmt.Errorf("web: encode event: %w", err)
	} else {
		sc.buf.WriteByte('\n')
	}
	return nil
}

func (s *sseWriter) comment(text string) error {
	sc := getScratch()
	defer sc.put()
	sc.buf.WriteString(": ")
	writeField(&sc.buf, text)
	sc.buf.WriteString("\n\n")
	if err := s.write(&sc.buf); err != nil {
		return err
	}
	return s.flush()
}

func (s *sseWriter) write(b *bytes.Buffer) error {
	if b.Len() == 0 {
		return nil
	}
	s.armDeadline()
	_, err := s.w.Write(b.Bytes())
	return err
}

// armDeadline gives the next write to the client at least timeout to complete. It moves the
// connection's deadline only when less than that is left, and then to one and a half timeouts
// ahead, so the writes and flushes of a stream share one deadline update (a timer change in the
// runtime) instead of making one each. Writers without deadlines just have none.
func (s *sseWriter) armDeadline() {
	now := time.Now()
	if s.deadline.Sub(now) >= s.timeout {
		return
	}
	s.deadline = now.Add(s.timeout + s.timeout/2)
	_ = s.rc.SetWriteDeadline(s.deadline)
}

// flush sends what was written (and the headers) to the client.
func (s *sseWriter) flush() error {
	s.armDeadline()
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// writeField writes s into an SSE field with each CR and LF replaced by a space (either would
// end the field).
func writeField(b *bytes.Buffer, s string) {
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			b.WriteString(s)
			return
		}
		b.WriteString(s[:i])
		b.WriteByte(' ')
		s = s[i+1:]
	}
}
