package redact

import (
	"regexp"
	"strings"
)

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

var (
	bearerTail = regexp.MustCompile(`(?i)bearer\s*$`)
	pemBegin   = "-----BEGIN"
)

// hold returns where the possibly unfinished secret at the end of s starts (len(s) if none).
func (r *Redactor) hold(s string) int {
	cut := len(s)
	for cut > 0 && tokenChar(s[cut-1]) { // a token may go on
		cut--
	}
	if loc := bearerTail.FindStringIndex(s[:cut]); loc != nil { // "Bearer " waits for its token
		cut = loc[0]
	}
	if i := strings.LastIndex(s, pemBegin); i >= 0 && !strings.Contains(s[i:], "-----END") {
		cut = min(cut, i) // a private key block until its end line
	}
	for k := min(len(pemBegin)-1, len(s)); k > 0; k-- { // "-----BEG" may become a block
		if strings.HasSuffix(s, pemBegin[:k]) {
			cut = min(cut, len(s)-k)
			break
		}
	}
	if r != nil {
		for _, lit := range r.literals { // the start of a configured secret
			for k := min(len(lit)-1, len(s)); k > 0; k-- {
				if strings.HasSuffix(s, lit[:k]) {
					cut = min(cut, len(s)-k)
					break
				}
			}
		}
	}
	return cut
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
