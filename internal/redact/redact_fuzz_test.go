package redact

import (
	"strings"
	"testing"
)

// FuzzRedact: no panic, and a known token embedded anywhere never survives Redact nor a stream
// that receives the text in two deltas split anywhere. Seeds are in testdata/fuzz/FuzzRedact.
func FuzzRedact(f *testing.F) {
	f.Add("before ", " after", uint8(0), uint16(3))
	f.Add("", "", uint8(5), uint16(0))
	f.Add("Bearer ", "\n", uint8(2), uint16(40))
	r := New(testSecrets)
	var toks []string
	for _, tok := range knownTokens {
		toks = append(toks, tok)
	}
	f.Fuzz(func(t *testing.T, prefix, suffix string, which uint8, cut uint16) {
		tok := toks[int(which)%len(toks)]
		text := prefix + tok + suffix
		if got := r.Redact(text); strings.Contains(got, tok) {
			t.Fatalf("Redact(%q) = %q, still carries %q", text, got, tok)
		}
		c := int(cut) % (len(text) + 1)
		s := r.Stream()
		got := s.Write(text[:c]) + s.Write(text[c:]) + s.Flush()
		if strings.Contains(got, tok) {
			t.Fatalf("stream of %q split at %d = %q, still carries %q", text, c, got, tok)
		}
		_ = r.Redact(prefix) // arbitrary input: must not panic
	})
}
