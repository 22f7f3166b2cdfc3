// Package redact masks what looks like a secret in text the gateway shows: tool results before
// the model reads them, and every message posted to a channel. It knows the shapes of common
// tokens (Slack, OpenAI, Discord, AWS, GitHub, JWT, Bearer headers, PEM private keys) and the
// literal values of the gateway's own configured secrets.
package redact

import (
	"regexp"
	"slices"
	"strings"
)

// Mask replaces every secret found.
const Mask = "[redacted]"

// minSecretLen is the shortest configured value masked literally: shorter values ("true", a
// port) would mask ordinary words.
const minSecretLen = 8

// shapes are the token shapes, without word boundaries so that glued-on text cannot hide one.
// A shape marked random also needs upper and lower case letters and a digit in what it matched,
// so kebab-case words ("disk-usage-monitoring-service") are not taken for keys.
//
// Each shape has a cheap test (may) that every text it matches passes: most outbound text (an
// answer, a streamed delta) holds no secret, and Go's regexp costs microseconds per pass over a
// paragraph, so a shape's expression runs only when its test says a match is possible.
var shapes = []shape{
	{re: regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?:[\s\S]*?-----END[A-Z0-9 ]*PRIVATE KEY-----|[\s\S]*$)`), may: has("-----BEGIN")},
	{re: regexp.MustCompile(`(?:xox[abposer]|xoxe\.xox[bp]|xapp)-[A-Za-z0-9-]{8,}`), may: has("xox", "xapp-")},
	{re: regexp.MustCompile(`sk-[A-Za-z0-9_-]{20,}`), random: true, may: has("sk-")},
	{re: regexp.MustCompile(`gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}`), may: has("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")},
	{re: regexp.MustCompile(`(?:AKIA|ASIA)[0-9A-Z]{16}`), may: has("AKIA", "ASIA")},
	{re: regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), may: has("eyJ")},
	{re: regexp.MustCompile(`[A-Za-z0-9_-]{23,28}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,40}`), random: true, may: dottedRun}, // Discord bot token
}

type shape struct {
	re     *regexp.Regexp
	random bool
	may    func(string) bool // false only when re cannot match
}

// has returns a test that passes when s contains one of the literals.
func has(literals ...string) func(string) bool {
	return func(s string) bool {
		for _, l := range literals {
			if strings.Contains(s, l) {
				return true
			}
		}
		return false
	}
}

// dottedRun reports whether s has 23 or more of [A-Za-z0-9_-] in a row followed by a dot: the
// start every Discord token has.
func dottedRun(s string) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-':
			run++
		case c == '.' && run >= 23:
			return true
		default:
			run = 0
		}
	}
	return false
}

// hasFold reports whether s contains word (ASCII lower case) in any letter case.
func hasFold(s, word string) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		if s[i]|0x20 == word[0] && strings.EqualFold(s[i:i+len(word)], word) {
			return true
		}
	}
	return false
}

// matches returns the byte ranges of s this shape masks.
func (sh shape) matches(s string) [][]int {
	if !sh.may(s) {
		return nil
	}
	all := sh.re.FindAllStringIndex(s, -1)
	if !sh.random {
		return all
	}
	out := all[:0]
	for _, m := range all {
		if looksRandom(s[m[0]:m[1]]) {
			out = append(out, m)
		}
	}
	return out
}

func looksRandom(s string) bool {
	var upper, lower, digit bool
	for i := 0; i < len(s); i++ {
		c := s[i]
		upper = upper || c >= 'A' && c <= 'Z'
		lower = lower || c >= 'a' && c <= 'z'
		digit = digit || c >= '0' && c <= '9'
	}
	return upper && lower && digit
}

// bearer keeps the word and masks the credential after it.
var bearer = regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{16,}`)

// Redactor masks secrets. A nil *Redactor masks the known shapes only. Safe for concurrent use.
type Redactor struct {
	literals []string // longest first, so a secret containing another is masked whole
}

// New returns a Redactor that also masks the literal values in secrets (the gateway's own
// tokens and keys); values shorter than 8 bytes are ignored.
func New(secrets []string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		if len(s) >= minSecretLen && !strings.Contains(s, Mask) && !slices.Contains(r.literals, s) {
			r.literals = append(r.literals, s)
		}
	}
	slices.SortFunc(r.literals, func(a, b string) int { return len(b) - len(a) })
	return r
}

// Redact returns s with every secret found replaced by Mask.
func (r *Redactor) Redact(s string) string {
	if s == "" {
		return s
	}
	if r != nil {
		for _, lit := range r.literals {
			if strings.Contains(s, lit) {
				s = strings.ReplaceAll(s, lit, Mask)
			}
		}
	}
	for _, sh := range shapes {
		s = replaceSpans(s, sh.matches(s))
	}
	if !hasFold(s, "bearer") {
		return s
	}
	return bearer.ReplaceAllString(s, "${1}"+Mask)
}

// maybe reports whether s may hold a secret: false means Redact(s) == s and spans(s) is empty.
func (r *Redactor) maybe(s string) bool {
	if r != nil {
		for _, lit := range r.literals {
			if strings.Contains(s, lit) {
				return true
			}
		}
	}
	for _, sh := range shapes {
		if sh.may(s) {
			return true
		}
	}
	return hasFold(s, "bearer")
}

// spans returns the byte ranges of s that Redact would mask (literals and shapes), unordered.
func (r *Redactor) spans(s string) [][]int {
	var out [][]int
	if r != nil {
		for _, lit := range r.literals {
			for i := 0; ; {
				j := strings.Index(s[i:], lit)
				if j < 0 {
					break
				}
				out = append(out, []int{i + j, i + j + len(lit)})
				i += j + 1
			}
		}
	}
	for _, sh := range shapes {
		out = append(out, sh.matches(s)...)
	}
	if !hasFold(s, "bearer") {
		return out
	}
	return append(out, bearer.FindAllStringIndex(s, -1)...)
}

// replaceSpans replaces the ordered, disjoint ranges ms of s by Mask.
func replaceSpans(s string, ms [][]int) string {
	if len(ms) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range ms {
		b.WriteString(s[last:m[0]])
		b.WriteString(Mask)
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}
