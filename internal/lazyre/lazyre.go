// Package lazyre holds regular expressions that compile at their first use instead of at
// package initialisation. A package-level regexp.MustCompile runs in every process that links
// the package, whether it is ever matched or not: the content rules of the model router, the
// Slack formatter and the PostgreSQL store's name checks cost about 0.3 MiB of heap and a
// millisecond of start-up in a gateway that uses none of them.
package lazyre

import (
	"regexp"
	"sync"
)

// Regexp is a regexp.Regexp compiled at first use; safe for concurrent use. Its methods are
// those of regexp.Regexp. An invalid expression panics at first use, as MustCompile would at
// start: the tests that exercise the expression find it.
type Regexp struct {
	expr string
	once sync.Once
	re   *regexp.Regexp
}

// New returns expr to be compiled at its first use.
func New(expr string) *Regexp { return &Regexp{expr: expr} }

// Re is the compiled expression.
func (r *Regexp) Re() *regexp.Regexp {
	r.once.Do(func() { r.re = regexp.MustCompile(r.expr) })
	return r.re
}

// String is the source text.
func (r *Regexp) String() string { return r.expr }

func (r *Regexp) MatchString(s string) bool                  { return r.Re().MatchString(s) }
func (r *Regexp) FindString(s string) string                 { return r.Re().FindString(s) }
func (r *Regexp) FindStringSubmatch(s string) []string       { return r.Re().FindStringSubmatch(s) }
func (r *Regexp) FindAllStringIndex(s string, n int) [][]int { return r.Re().FindAllStringIndex(s, n) }
func (r *Regexp) FindAllStringSubmatch(s string, n int) [][]string {
	return r.Re().FindAllStringSubmatch(s, n)
}
func (r *Regexp) FindAllSubmatch(b []byte, n int) [][][]byte { return r.Re().FindAllSubmatch(b, n) }
func (r *Regexp) ReplaceAllString(src, repl string) string   { return r.Re().ReplaceAllString(src, repl) }
func (r *Regexp) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return r.Re().ReplaceAllStringFunc(src, repl)
}
