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
// deadline, flushed at once (events) or by the caller (buffer). The events are encoded into buf, reused across batches and (through
// sseWriters) across streams, so an event costs no allocation of its own.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     bytes.Buffer
	enc     *json.Encoder // writes into buf, for the events appendEvent leaves to encoding/json
	evs     []wireEvent   // the subscriber's batch buffer while follow runs (see session.pending)
	one     [1]wireEvent
}

// sseWriters holds released writers. A writer whose buffer grew past maxPooledBuf is not kept.
var sseWriters = sync.Pool{New: func() any {
	sw := &sseWriter{}
	sw.enc = json.NewEncoder(&sw.buf)
	return sw
}}

const maxPooledBuf = 64 << 10

func (c *Channel) startSSE(w http.ResponseWriter, session string) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache, no-store")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Echogate-Session", session)
	w.WriteHeader(http.StatusOK)
	sw := sseWriters.Get().(*sseWriter)
	sw.w, sw.rc, sw.timeout = w, http.NewResponseController(w), c.cfg.WriteTimeout
	return sw
}

// release gives sw back for another stream; the caller must not use it afterwards.
func (s *sseWriter) release() {
	if s.buf.Cap() > maxPooledBuf || cap(s.evs) > maxBatch {
		return
	}
	s.w, s.rc = nil, nil
	s.buf.Reset()
	clear(s.evs[:cap(s.evs)])
	s.evs = s.evs[:0]
	s.one[0] = wireEvent{}
	sseWriters.Put(s)
}

func (s *sseWriter) event(e wireEvent) error {
	s.one[0] = e
	return s.events(s.one[:])
}

// events writes evs with one write and one flush.
func (s *sseWriter) events(evs []wireEvent) error {
	if len(evs) == 0 {
		return nil
	}
	if err := s.buffer(evs); err != nil {
		return err
	}
	return s.flush()
}

// buffer writes evs with one write to the response, without flushing it: they reach the
// client with the next flush, or once the response's own buffer fills.
func (s *sseWriter) buffer(evs []wireEvent) error {
	s.buf.Reset()
	for _, e := range evs {
		if err := s.append(e); err != nil {
			return err
		}
	}
	return s.write()
}

// append encodes e into buf as one SSE event.
func (s *sseWriter) append(e wireEvent) error {
	mark := s.buf.Len()
	if e.Seq > 0 {
		var num [20]byte
		s.buf.WriteString("id: ")
		s.buf.Write(strconv.AppendInt(num[:0], e.Seq, 10))
		s.buf.WriteByte('\n')
	}
	s.buf.WriteString("event: ")
	writeField(&s.buf, string(e.Type))
	s.buf.WriteString("\ndata: ")
	// JSON escapes every newline.
	if data, ok := appendEvent(s.buf.AvailableBuffer(), &e); ok {
		s.buf.Write(data)
		s.buf.WriteString("\n\n")
	} else if err := s.enc.Encode(e); err != nil { // Encode ends with a newline
		s.buf.Truncate(mark)
		return fmt.Errorf("web: encode event: %w", err)
	} else {
		s.buf.WriteByte('\n')
	}
	return nil
}

func (s *sseWriter) comment(text string) error {
	s.buf.Reset()
	s.buf.WriteString(": ")
	writeField(&s.buf, text)
	s.buf.WriteString("\n\n")
	if err := s.write(); err != nil {
		return err
	}
	return s.flush()
}

func (s *sseWriter) write() error {
	if s.buf.Len() == 0 {
		return nil
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout)) // unsupported writers just have none
	_, err := s.w.Write(s.buf.Bytes())
	return err
}

// flush sends what was written (and the headers) to the client.
func (s *sseWriter) flush() error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
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
