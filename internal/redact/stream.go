package redact

import "strings"

// maxHold bounds the text a Stream holds back; past it the stream emits all but a margin long
// enough for any token shape.
const (
	maxHold    = 16 << 10
	holdMargin = 1 << 10
)

// Stream redacts text that arrives in pieces (a streamed answer): a secret split over two
// pieces is still masked. It holds back the end of what it was given while that end could be
// the start of a secret, and emits it with the next piece or at Flush. Not safe for concurrent
// use.
type Stream struct {
	r       *Redactor
	pending string
}

// Stream returns a new stream that masks what r masks.
func (r *Redactor) Stream() *Stream { return &Stream{r: r} }

// Write adds delta and returns the text that is now safe to show (possibly empty).
func (s *Stream) Write(delta string) string {
	s.pending += delta
	if !s.r.maybe(s.pending) { // no secret can be in it: only a possible start is held back
		cut := s.r.hold(s.pending)
		out := s.pending[:cut]
		s.pending = s.pending[cut:]
		return out
	}
	cut := s.r.safeCut(s.pending, s.r.hold(s.pending))
	if len(s.pending)-cut > maxHold {
		cut = s.r.safeCut(s.pending, len(s.pending)-holdMargin)
	}
	out := s.r.Redact(s.pending[:cut])
	s.pending = s.pending[cut:]
	return out
}

// Flush returns the rest, redacted; the stream is then empty.
func (s *Stream) Flush() string {
	out := s.r.Redact(s.pending)
	s.pending = ""
	return out
}

// tokenChar reports the bytes token shapes are made of.
func tokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		strings.IndexByte("_-.+/=~", c) >= 0
}

const pemBegin = "-----BEGIN"

// hold returns where the possibly unfinished secret at the end of s starts (len(s) if none).
func (r *Redactor) hold(s string) int {
	cut := len(s)
	for cut > 0 && tokenChar(s[cut-1]) { // a token may go on
		cut--
	}
	t := cut
	for t > 0 && strings.IndexByte(" \t\r\n\v\f", s[t-1]) >= 0 {
		t--
	}
	if t >= len("bearer") && strings.EqualFold(s[t-len("bearer"):t], "bearer") {
		cut = t - len("bearer") // "Bearer " waits for its token
	}
	if i := strings.LastIndex(s, pemBegin); i >= 0 && !strings.Contains(s[i:], "-----END") {
		cut = min(cut, i) // a private key block until its end line
	}
	cut = min(cut, partialStart(s, pemBegin)) // "-----BEG" may become a block
	if r != nil {
		for _, lit := range r.literals { // the start of a configured secret
			cut = min(cut, partialStart(s, lit))
		}
	}
	return cut
}

// partialStart returns where the longest proper prefix of lit that ends s starts, or len(s) when
// s ends with none. It looks only at the last len(lit)-1 bytes, at the bytes equal to lit[0].
func partialStart(s, lit string) int {
	for i := max(0, len(s)-len(lit)+1); i < len(s); i++ {
		j := strings.IndexByte(s[i:], lit[0])
		if j < 0 {
			break
		}
		i += j
		if strings.HasPrefix(lit, s[i:]) {
			return i
		}
	}
	return len(s)
}

// safeCut moves cut back to the start of any secret that spans it, so what is emitted never
// ends inside one.
func (r *Redactor) safeCut(s string, cut int) int {
	for moved := true; moved && cut > 0; {
		moved = false
		for _, m := range r.spans(s) {
			if m[0] < cut && cut < m[1] {
				cut, moved = m[0], true
			}
		}
	}
	return cut
}
