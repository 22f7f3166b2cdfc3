// Package demo is the offline model used when no API key and no base URL are configured, so a
// fresh checkout shows the whole flow (streaming, tool calls, tool results, usage) with no network.
//
// It is deterministic and every reply starts with Label. It calls current_time when asked for the
// time, http_fetch for "fetch http…", the schedule tool for "remind me every day to …" (a
// recurring job, which needs approval: the demo's way to show an approval prompt), answers from
// the tool results on the next call, and otherwise echoes what it received. Its usage names the model "demo" so it is never priced as a
// real model.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/internal/hashvec"
	"github.com/echogate/echogate/internal/lazyre"
	"github.com/echogate/echogate/tools"
)

// Label starts every reply of the demo model.
const Label = "[demo model — set OPENAI_API_KEY for real answers]"

// ModelName is the model named in the demo's responses and usage.
const ModelName = "demo"

// Tool names the demo knows how to call.
const (
	toolTime     = "current_time"
	toolFetch    = "http_fetch"
	toolSchedule = "schedule"
)

// ApprovalPhrase starts the message that makes the demo model call a tool that needs approval:
// "remind me every day to check the deploys" asks the schedule tool for a daily job (recurring
// jobs are sensitive, so the gateway asks before creating it).
const ApprovalPhrase = "remind me every day to"

// demoReminderCron is when the demo's daily reminder runs: 09:00 UTC.
const demoReminderCron = "0 9 * * *"

// Config configures the demo model. The zero value streams fragments of 6 runes 15ms apart.
type Config struct {
	// FragmentDelay spaces the streamed fragments so the reply visibly streams. 0 means 15ms;
	// negative means no delay (tests).
	FragmentDelay time.Duration
	// FragmentSize is the fragment length in runes; 0 means 6.
	FragmentSize int
}

// Model is the demo agent.Model. It is safe for concurrent use.
type Model struct {
	cfg  Config
	log  *slog.Logger
	wait func(ctx context.Context, d time.Duration) error // replaced by tests
}

var _ agent.Model = (*Model)(nil)

// New returns a demo model. It does no I/O.
func New(cfg Config, log *slog.Logger) (*Model, error) {
	if cfg.FragmentSize < 0 {
		return nil, fmt.Errorf("demo: fragment size %d is negative: use 0 for the default", cfg.FragmentSize)
	}
	if cfg.FragmentDelay == 0 {
		cfg.FragmentDelay = 15 * time.Millisecond
	}
	if cfg.FragmentSize == 0 {
		cfg.FragmentSize = 6
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Model{cfg: cfg, log: log, wait: waitCtx}, nil
}

func waitCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Generate answers req; it implements agent.Model. It streams the reply in fragments (onDelta may
// be nil; its error aborts and is returned wrapped) and returns promptly with ctx's error when ctx
// ends.
func (m *Model) Generate(ctx context.Context, req agent.Request, onDelta func(agent.Delta) error) (agent.Response, error) {
	text, calls := plan(req)
	resp := agent.Response{
		Message: echogate.Message{Role: echogate.RoleAssistant, ToolCalls: calls},
		Model:   ModelName,
		Usage: echogate.Usage{
			Kind:         echogate.UsageModel,
			Model:        ModelName,
			InputTokens:  tokens(requestLen(req)),
			OutputTokens: tokens(len(text) + callsLen(calls)),
		},
		FinishReason: "stop",
	}
	if len(calls) > 0 {
		resp.FinishReason = "tool_calls"
	}
	var sent strings.Builder
	for i, frag := range fragments(text, m.cfg.FragmentSize) {
		if i > 0 && m.cfg.FragmentDelay > 0 {
			if err := m.wait(ctx, m.cfg.FragmentDelay); err != nil {
				return m.failed(resp, sent.String(), fmt.Errorf("demo: generate: %w", err))
			}
		}
		if err := ctx.Err(); err != nil {
			return m.failed(resp, sent.String(), fmt.Errorf("demo: generate: %w", err))
		}
		sent.WriteString(frag)
		if onDelta != nil {
			if err := onDelta(agent.Delta{Text: frag}); err != nil {
				return m.failed(resp, sent.String(), fmt.Errorf("demo: generate: delta callback: %w", err))
			}
		}
	}
	resp.Message.Content = text
	return resp, nil
}

func (m *Model) failed(resp agent.Response, partial string, err error) (agent.Response, error) {
	resp.Message.Content = partial
	resp.Message.ToolCalls = nil
	resp.Usage.Failed = true
	return resp, err
}

// plan decides the reply: text and tool calls.
func plan(req agent.Request) (string, []echogate.ToolCall) {
	msgs := req.Messages
	if len(msgs) == 0 {
		return Label + "\n\nI received no messages at all.", nil
	}
	if msgs[len(msgs)-1].Role == echogate.RoleTool {
		return answerToolResults(msgs), nil
	}
	user := lastUser(msgs)
	callID := fmt.Sprintf("call_demo_%d", len(msgs))
	if spec, ok := findTool(req.Tools, toolFetch); ok {
		if m := fetchRE.FindStringSubmatch(strings.TrimSpace(user)); m != nil {
			args := map[string]string{paramName(spec, "url", "url"): m[1]}
			return Label + "\n\nLet me fetch " + m[1] + " with the http_fetch tool…",
				[]echogate.ToolCall{{ID: callID, Name: toolFetch, Arguments: mustJSON(args)}}
		}
	}
	if _, ok := findTool(req.Tools, toolSchedule); ok {
		if m := remindRE.FindStringSubmatch(strings.TrimSpace(user)); m != nil {
			what := strings.TrimRight(strings.TrimSpace(m[1]), ".!")
			args := map[string]string{"action": "create", "prompt": "Remind me to " + what + ".", "cron": demoReminderCron, "timezone": "UTC"}
			return Label + "\n\nI'll ask the schedule tool for a daily reminder at 09:00 UTC to " + what + ". A recurring job needs your approval first.",
				[]echogate.ToolCall{{ID: callID, Name: toolSchedule, Arguments: mustJSON(args)}}
		}
	}
	if spec, ok := findTool(req.Tools, toolTime); ok && asksTime(user) {
		args := map[string]string{}
		if zone := zoneRE.FindString(user); zone != "" {
			args[paramName(spec, "zone", "tz")] = zone
		}
		return Label + "\n\nLet me check the clock with the current_time tool…",
			[]echogate.ToolCall{{ID: callID, Name: toolTime, Arguments: mustJSON(args)}}
	}
	return echo(req, user), nil
}

var (
	fetchRE  = lazyre.New(`(?i)^fetch\s+(https?://\S+)`)
	remindRE = lazyre.New(`(?i)^` + ApprovalPhrase + `\s+(\S.*)`)
	zoneRE   = lazyre.New(`\b(?:[A-Z][A-Za-z]+/[A-Z][A-Za-z_]+(?:/[A-Z][A-Za-z_]+)?|UTC)\b`)
	timeQs   = []string{"what time", "the time", "time is it", "current time", "time now", "what's the time", "what day", "which day", "today's date", "date today", "what date", "the date"}
)

func asksTime(text string) bool {
	t := strings.ToLower(text)
	for _, q := range timeQs {
		if strings.Contains(t, q) {
			return true
		}
	}
	return false
}

func lastUser(msgs []echogate.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == echogate.RoleUser {
			return msgs[i].Content
		}
	}
	return ""
}

func findTool(specs []tools.Spec, name string) (tools.Spec, bool) {
	for _, s := range specs {
		if s.Name == name {
			return s, true
		}
	}
	return tools.Spec{}, false
}

// paramName finds the schema property whose name contains one of the hints, else the first hint:
// the demo does not know the exact schema of the built-in tools.
func paramName(spec tools.Spec, hints ...string) string {
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(spec.Parameters, &schema) == nil {
		for _, h := range hints {
			for name := range schema.Properties {
				if strings.Contains(strings.ToLower(name), h) {
					return name
				}
			}
		}
	}
	return hints[0]
}

func mustJSON(v map[string]string) string {
	b, err := json.Marshal(v)
	if err != nil { // a map of strings always marshals
		return "{}"
	}
	return string(b)
}

func fragments(s string, size int) []string {
	var out []string
	for len(s) > 0 {
		i, n := 0, 0
		for i < len(s) && n < size {
			_, w := utf8.DecodeRuneInString(s[i:])
			i += w
			n++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

func tokens(n int) int64 {
	if n <= 0 {
		return 0
	}
	return int64(n+3) / 4
}

func requestLen(req agent.Request) int {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content) + callsLen(m.ToolCalls) + 4
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return n
}

func callsLen(calls []echogate.ToolCall) int {
	n := 0
	for _, c := range calls {
		n += len(c.Name) + len(c.Arguments)
	}
	return n
}

// Embed returns deterministic offline embeddings (feature hashing of the lower-cased words, so
// texts sharing words are close), letting memory and knowledge work without a key. dims 0 means
// 1536. It does no I/O and only fails on bad arguments or an ended ctx.
func (m *Model) Embed(ctx context.Context, model string, dims int, texts []string) ([][]float32, echogate.Usage, error) {
	usage := echogate.Usage{Kind: echogate.UsageEmbedding, Model: ModelName}
	if dims < 0 {
		usage.Failed = true
		return nil, usage, errors.New("demo: embed: dimensions must not be negative: use 0 for the default")
	}
	if dims == 0 {
		dims = 1536
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			usage.Failed = true
			return nil, usage, fmt.Errorf("demo: embed: %w", err)
		}
		out[i] = hashvec.Embed(t, dims)
		usage.InputTokens += tokens(len(t))
	}
	return out, usage, nil
}
