package router

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/internal/lazyre"
)

// Rule is the condition of a Route. Rules look at the request only (its last user message, the
// whole conversation's size, the hints, the tools offered); they do no I/O and are deterministic,
// so every model call of one turn takes the same route.
type Rule string

const (
	// RuleDefault matches every request. A route with it must be the last one.
	RuleDefault Rule = "default"
	// RuleLong matches when the last user message is longer than Config.LongChars characters or
	// the whole conversation (all message text) is longer than Config.LongContextChars.
	RuleLong Rule = "long"
	// RuleCode matches when the last user message holds a fenced code block (``` or ~~~), or
	// looks like code: at least two different code markers (function/class definitions, imports,
	// statement-ending semicolons or braces, stack traces, SQL, shell prompts…) or three lines
	// that end like code statements.
	RuleCode Rule = "code"
	// RuleAttachments matches when the turn carries attachments (Hints.Attachments > 0) or the
	// last user message carries images.
	RuleAttachments Rule = "attachments"
	// RuleTools matches when tools are offered and the last user message asks for an action: it
	// starts (after greetings and "please / can you / could you …") with an action verb such as
	// search, find, fetch, run, check, remember, schedule, create, send, delete, or it contains a
	// URL. It is a cheap heuristic: a turn that needs tools but words it differently still works,
	// on the route's model.
	RuleTools Rule = "tools"
)

func (r Rule) valid() bool {
	switch r {
	case RuleDefault, RuleLong, RuleCode, RuleAttachments, RuleTools:
		return true
	}
	return false
}

// Rules lists the known rules, for config error messages and documentation.
func Rules() []Rule {
	return []Rule{RuleLong, RuleCode, RuleAttachments, RuleTools, RuleDefault}
}

// match reports whether rule r matches req, and why (a short, log- and console-friendly text).
func (rt *Router) match(r Rule, req agent.Request, last string) (bool, string) {
	switch r {
	case RuleDefault:
		return true, "default"
	case RuleLong:
		if n := len([]rune(last)); n > rt.cfg.LongChars {
			return true, fmt.Sprintf("message of %d chars > %d", n, rt.cfg.LongChars)
		}
		if n := conversationChars(req.Messages); n > rt.cfg.LongContextChars {
			return true, fmt.Sprintf("conversation of %d chars > %d", n, rt.cfg.LongContextChars)
		}
	case RuleCode:
		return looksLikeCode(last)
	case RuleAttachments:
		if n := req.Hints.Attachments; n > 0 {
			return true, plural(n, "attachment")
		}
		if n := lastUserImages(req.Messages); n > 0 {
			return true, plural(n, "image")
		}
	case RuleTools:
		if len(req.Tools) == 0 {
			return false, ""
		}
		if verb, ok := asksForAction(last); ok {
			return true, "asks for an action (" + verb + ")"
		}
	}
	return false, ""
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// lastUser returns the text of the last user message of msgs ("" when there is none).
func lastUser(msgs []echogate.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == echogate.RoleUser {
			return msgs[i].Content
		}
	}
	return ""
}

func lastUserImages(msgs []echogate.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == echogate.RoleUser {
			return len(msgs[i].Images)
		}
	}
	return 0
}

// conversationChars is the size of all text the model would read.
func conversationChars(msgs []echogate.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
	}
	return n
}

var fenceRE = lazyre.New("(?m)^[ \t]*(```|~~~)")

// codeMarkers are signs of code in prose. Each is one "kind"; two different kinds make code. lits
// is a cheap prefilter: the regexp only runs when the text contains one of them.
var codeMarkers = []struct {
	name string
	lits []string
	re   *lazyre.Regexp
}{
	{"func", []string{"func"}, lazyre.New(`\bfunc\s*(\([^)]*\)\s*)?\w*\s*\(`)},
	{"def", []string{"def "}, lazyre.New(`(?m)^\s*(async\s+)?def\s+\w+\s*\(`)},
	{"class", []string{"class", "struct", "interface", "enum"}, lazyre.New(`(?m)^\s*(public\s+|export\s+)?(class|struct|interface|enum)\s+\w+\s*[:({<]`)},
	{"import", []string{"import", "#include", "using", "package", "require("}, lazyre.New(`(?m)^\s*(import\s+[\w.{"'*]|from\s+[\w.]+\s+import\s|#include\s*[<"]|using\s+[\w.]+;|package\s+\w+\s*;?$|require\(['"])`)},
	{"function", []string{"function", "=>", "lambda"}, lazyre.New(`\bfunction\s*\w*\s*\(|\(\s*\w*\s*\)\s*=>|\blambda\s+\w*\s*:`)},
	{"declaration", []string{"const", "let", "var", "val", "int", "long", "char", "float", "double", "bool", "string", "auto", "fn", "static", "final"},
		lazyre.New(`(?m)^\s*(const|let|var|val|int|long|char|float|double|bool|string|auto|fn|pub fn|static|final)\s+[\w*&\[\]<>]+\s*(=|:=|\(|;|:)`)},
	{"assignment", []string{":="}, lazyre.New(`\w\s*:=\s*\S`)},
	{"return", []string{"return"}, lazyre.New(`(?m)^\s*return\b[^.?!]*;?\s*$`)},
	{"control flow", []string{"if", "for", "while", "switch", "else"}, lazyre.New(`(?m)^\s*(if|for|while|switch)\s*\(?.*\)?\s*\{\s*$|^\s*(if|for|while|elif|else)\b.*:\s*$`)},
	{"call", []string{"console.log", "System.out.print", "fmt.Print", "printf", "println", "print"}, lazyre.New(`\b(console\.log|System\.out\.print|fmt\.Print\w*|printf|println!?|print)\s*\(`)},
	// SQL in capitals only: "select a color from the list" is prose.
	{"sql", []string{"SELECT", "INSERT", "UPDATE", "CREATE"},
		lazyre.New(`(?s)\b(SELECT\s+.+?\s+FROM\s+\w|INSERT\s+INTO\s+\w|UPDATE\s+\w+\s+SET\s|CREATE\s+(TABLE|INDEX|VIEW)\s)`)},
	{"stack trace", []string{"Traceback", "panic: ", "at ", "goroutine ", "Exception in thread", "File \""},
		lazyre.New(`Traceback \(most recent call last\)|(?m)^panic: |(?m)^\s+at [\w$.]+\(|goroutine \d+ \[|Exception in thread|(?m)^\s*File "[^"]+", line \d+`)},
	{"shell", []string{"$ "}, lazyre.New(`(?m)^\s*\$\s+(sudo\s+)?(git|go|npm|npx|yarn|pip|python3?|docker|kubectl|make|cargo|curl|ls|cd|cat|grep)\b`)},
	{"markup", []string{"<"}, lazyre.New(`</?(div|span|html|body|script|template|svg|button|input)\b[^>]*>`)},
}

func containsAny(s string, lits []string) bool {
	for _, l := range lits {
		if strings.Contains(s, l) {
			return true
		}
	}
	return false
}

// statementEndRE matches lines that end like code statements: `;`, `{`, `}` or `);`.
var statementEndRE = lazyre.New(`(?m)(;|\{|\}|\);)\s*$`)

// maxCodeScan bounds the text the code rule scans (the regexps cost about 30µs per KB).
const maxCodeScan = 8 << 10

// looksLikeCode applies the code rule to text.
func looksLikeCode(text string) (bool, string) {
	if text == "" {
		return false, ""
	}
	if len(text) > maxCodeScan {
		text = text[:maxCodeScan] // a huge paste is decided by its beginning (and by RuleLong)
	}
	if (strings.Contains(text, "```") || strings.Contains(text, "~~~")) && fenceRE.MatchString(text) {
		return true, "fenced code block"
	}
	var kinds []string
	for _, m := range codeMarkers {
		if containsAny(text, m.lits) && m.re.MatchString(text) {
			kinds = append(kinds, m.name)
		}
	}
	if len(kinds) >= 2 {
		return true, "code markers: " + strings.Join(kinds, ", ")
	}
	if !strings.ContainsAny(text, ";{}") {
		return false, ""
	}
	if n := len(statementEndRE.FindAllStringIndex(text, -1)); n >= 3 {
		return true, fmt.Sprintf("%d lines ending like code", n)
	}
	return false, ""
}

// actionVerbs start a request for an action that tools can carry out.
var actionVerbs = map[string]bool{
	"search": true, "find": true, "look": true, "lookup": true, "fetch": true, "get": true, "download": true,
	"open": true, "browse": true, "visit": true, "run": true, "execute": true, "exec": true, "check": true,
	"remember": true, "recall": true, "forget": true, "note": true, "save": true, "store": true,
	"schedule": true, "remind": true, "create": true, "make": true, "send": true, "post": true,
	"delete": true, "remove": true, "update": true, "add": true, "set": true, "book": true, "cancel": true,
	"list": true, "show": true, "query": true, "call": true, "ping": true, "deploy": true, "restart": true,
	"install": true, "google": true, "grep": true,
}

// leadIns are words skipped before the verb: greetings, politeness, modal questions.
var leadIns = map[string]bool{
	"please": true, "pls": true, "plz": true, "kindly": true, "hey": true, "hi": true, "hello": true,
	"ok": true, "okay": true, "so": true, "now": true, "can": true, "could": true, "would": true,
	"will": true, "you": true, "u": true, "go": true, "ahead": true, "and": true, "then": true,
	"quickly": true, "just": true, "also": true, "bot": true, "echogate": true,
}

var urlRE = lazyre.New(`https?://[^\s>]+`)

// asksForAction reports whether text asks for something tools do, and the verb (or "url").
func asksForAction(text string) (string, bool) {
	head := text
	if len(head) > 256 {
		head = head[:256] // the verb is in the first few words
	}
	words := strings.FieldsFunc(strings.ToLower(head), func(r rune) bool {
		return !unicode.IsLetter(r) && r != '\''
	})
	for i, w := range words {
		if i >= 8 {
			break
		}
		if leadIns[w] {
			continue
		}
		if actionVerbs[w] {
			return w, true
		}
		break
	}
	if urlRE.MatchString(text) {
		return "url", true
	}
	return "", false
}
